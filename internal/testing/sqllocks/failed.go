package sqllocks

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
)

// failedLockCostsItself: a store holding "a" calls Lock("b") with a
// context already cancelled, then with one that ends inside the enqueue
// transaction (between its INSERT and COMMIT). Each fails with its
// context's error and nothing else: "a" stays held (Lost open, Unlock
// succeeds) and "b" is left free for another store.
func failedLockCostsItself(t *testing.T, d Dialect) {
	sc := parallelScene(t, d, 2*time.Second, 2, false)
	s, other := sc.stores[0], sc.stores[1]
	ctx := t.Context()
	la, err := s.Lock(ctx, "a", "s", true)
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Lock(cancelled, "b", "s", true); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with a cancelled context: %v, want context.Canceled", err)
	}
	short, cancel := context.WithCancel(ctx)
	var once sync.Once
	d.SetHook(s, func(point string) {
		if point == "enqueue" {
			once.Do(cancel) // the context ends between the INSERT and the COMMIT
		}
	})
	if _, err := s.Lock(short, "b", "s", true); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock whose context ends inside the enqueue: %v, want context.Canceled", err)
	}
	// A store's holds end at its lock session's end: wait past a few
	// confirmations (every 2s/3), so that a session given up would show.
	select {
	case <-time.After(2 * time.Second):
	case <-la.Lost():
	}
	if closed(la.Lost()) {
		t.Fatalf("the hold of \"a\" was lost after a failed Lock of \"b\": %v", lostErr(la))
	}
	if ws, err := other.Waiters(ctx, "b"); len(ws) != 0 || err != nil && !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("waiters of \"b\" after the failed Locks: %v, %v; want none", ws, err)
	}
	octx, ocancel := context.WithTimeout(ctx, 5*time.Second)
	lb, err := other.Lock(octx, "b", "other", false)
	ocancel()
	if err != nil {
		t.Fatalf("TryLock of \"b\" by another store after the failed Locks: %v", err)
	}
	if err := lb.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := la.Unlock(ctx); err != nil {
		t.Fatalf("Unlock of \"a\": %v", err)
	}
}

// commitInFlight: a Lock whose context ends while its enqueue's COMMIT is
// held in a silent network returns; the network then comes back (before
// the server's idle bound), so the COMMIT may still reach the server.
// Whatever it did, the name must not stay taken: the store's removal
// locks the name's row first, so it waits for that transaction, and
// another store gets the name; the store's other hold stays.
func commitInFlight(t *testing.T, d Dialect) {
	sc := parallelScene(t, d, d.InFlightLockTimeout, 2, true)
	p, a, b := sc.p, sc.stores[0], sc.stores[1]
	ctx := t.Context()
	held, err := a.Lock(ctx, "held", "a", true)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	d.SetHook(a, func(point string) {
		if point == "enqueue" {
			once.Do(p.Freeze)
		}
	})
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	thawed := make(chan struct{})
	go func() {
		<-short.Done()
		time.Sleep(200 * time.Millisecond) // the COMMIT is held past the Lock's deadline, less than the idle bound
		p.Thaw()
		close(thawed)
	}()
	if _, err := a.Lock(short, "x", "a", true); err == nil {
		t.Fatal("Lock succeeded past its deadline")
	}
	<-thawed
	bctx, bcancel := context.WithTimeout(ctx, 15*time.Second)
	defer bcancel()
	lb, err := b.Lock(bctx, "x", "b", true)
	if err != nil {
		ws, _ := b.Waiters(ctx, "x")
		t.Fatalf("b's Lock of the name whose Lock's commit was in flight: %v; waiters %v", err, ws)
	}
	if closed(held.Lost()) {
		t.Fatalf("a's other hold was lost: %v", lostErr(held))
	}
	if err := lb.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
