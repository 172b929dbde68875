package etcd

import (
	"errors"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/poll"
)

// TestLockCorruptOffsetLeavesNoKey: a Lock whose create lands but reads a
// corrupt lock_fence_offset (edited by hand) fails with ErrCorrupt and
// leaves no waiter key: once the key is repaired, another store takes the
// lock (the key would otherwise sit on the store's live session, renewed
// for as long as it runs), and the store's next Lock of the name does not
// find a key of its own in the way (which abandons its session and loses
// its other holds).
func TestLockCorruptOffsetLeavesNoKey(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("corrupt-offset")
	a, b := openPair(t, prefix)
	other, err := a.Locks().Lock(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	cli := rawClient(t)
	if _, err := cli.Put(ctx, prefix+"/lock_fence_offset", "garbage"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Locks().TryLock(ctx, "x"); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("TryLock with a corrupt fence offset: %v, want ErrCorrupt", err)
	}
	if _, err := cli.Delete(ctx, prefix+"/lock_fence_offset"); err != nil {
		t.Fatal(err)
	}
	// The removal may run in the background; the session lasts 60s.
	poll.Until(t, 10*time.Second, "no key of lock x left", func() bool {
		_, err := a.Locks().Waiters(ctx, "x")
		return errors.Is(err, store.ErrNotFound)
	})
	l, err := b.Locks().TryLock(ctx, "x")
	if err != nil {
		t.Fatalf("another store's TryLock once the offset was repaired: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l, err = a.Locks().TryLock(ctx, "x")
	if err != nil {
		t.Fatalf("the store's own TryLock once the offset was repaired: %v", err)
	}
	select {
	case <-other.Lost():
		t.Fatalf("the store's hold of another lock was lost: %v", other.Unlock(ctx))
	default:
	}
	if err := l.Unlock(ctx); err != nil {
		t.Error(err)
	}
	if err := other.Unlock(ctx); err != nil {
		t.Error(err)
	}
}
