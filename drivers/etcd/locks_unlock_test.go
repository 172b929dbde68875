package etcd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/netproxy"
)

// TestUnlockNoAnswer: an Unlock whose delete gets no answer (the network
// frozen) says ErrUnavailable, and the key is removed in the background
// once the network is back: another store is granted the lock at once,
// not after the holder's session ends (60s here).
func TestUnlockNoAnswer(t *testing.T) {
	ctx := t.Context()
	ep := sharedServer(t).Endpoints()[0]
	prefix := freshPrefix("unlock-lost")
	p := netproxy.New(t, strings.TrimPrefix(ep, "http://"))
	holder, err := OpenStore(ctx, &Options{Endpoints: []string{p.Addr()}, Prefix: prefix}, store.WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	other := openPlain(t, prefix) // on the shared member, ep
	l, err := holder.Locks().Lock(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	p.Freeze()
	err = l.Unlock(ctx)
	p.Thaw()
	if err == nil {
		t.Fatal("Unlock without any answer succeeded")
	}
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Unlock without any answer: %v, want ErrUnavailable", err)
	}
	start := time.Now()
	octx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	l2, err := other.Locks().Lock(octx, "u")
	if err != nil {
		t.Fatalf("another store not granted the lock 15s after the failed Unlock: %v", err)
	}
	t.Logf("granted %v after the network came back", time.Since(start).Round(time.Millisecond))
	l2.Unlock(ctx)
	if err := l.Unlock(ctx); err != nil {
		t.Errorf("a second Unlock: %v, want nil", err)
	}
}
