package zookeeper

// Small helpers of this package's tests.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/poll"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// lockEventually polls cond until it holds, and stops the test if it does
// not within d.
func lockEventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, d, what, cond)
}

// isClosed reports whether a Lost channel (or any) is closed, without waiting.
var isClosed = poll.Closed

type lockResult struct {
	l   driver.Lock
	err error
	at  time.Duration // monoNow once Lock returned: the grant instant, or later
}

// lockAsync runs Lock in a goroutine the test waits for.
func lockAsync(t *testing.T, ctx context.Context, s *driverStore, name, owner string) <-chan lockResult {
	ch := make(chan lockResult, 1)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	wg.Go(func() {
		l, err := s.Lock(ctx, name, owner, true)
		ch <- lockResult{l, err, monoNow()}
	})
	return ch
}

// awaitHeld waits for a wire hook's signal that the request it holds was
// sent, and stops the test, saying what, when none comes within 10s.
func awaitHeld(t *testing.T, held <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal(what)
	}
}

// steeredLock opens a store whose wire the test steers and a raw
// connection to look at name's lock nodes, and locks and unlocks name once
// so that its parents exist. It returns the nodes' parent and the fence of
// that first hold.
func steeredLock(t *testing.T, addr, name string) (s *driverStore, w *wire, conn *zk.Conn, parent string, first int64) {
	t.Helper()
	w = new(wire)
	s = openTest(t, testOptions(addr, nil), w)
	conn = rawConn(t, addr)
	parent = s.lockParent(name)
	return s, w, conn, parent, lockOnce(t, s, name, "o")
}

func awaitLock(t *testing.T, ch <-chan lockResult, d time.Duration, what string) lockResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(d):
		t.Fatalf("%s: no result within %v", what, d)
	}
	panic("unreachable")
}

// useCutAndClose opens a store on options, whose connectString is proxy,
// uses it, cuts the proxy, sees a call fail, and closes the store: the
// life a goroutine-leak check wraps.
func useCutAndClose(t *testing.T, options map[string]string, proxy *zktest.Proxy) {
	t.Helper()
	s, err := open(options, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := s.Next(ctx, "leak", 1); err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := s.Next(short, "leak", 1); err == nil {
		t.Error("Next succeeded with the connection cut")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
