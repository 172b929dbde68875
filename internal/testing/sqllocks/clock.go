package sqllocks

import (
	"context"
	"errors"
	"testing"
	"time"
)

// confirmingHolderKept: a holder that keeps confirming is never taken
// over, however long others wait, and its session row's stored time plays
// no part: it is set an hour back (as a forward step of the server's
// clock would leave it) while others wait.
func confirmingHolderKept(t *testing.T, d Dialect) {
	const lockTimeout = 2 * time.Second // under load, 500ms lost the waiters' own sessions
	sc := parallelScene(t, d, lockTimeout, 3, false)
	a := sc.stores[0]
	ctx := t.Context()
	la, err := a.Lock(ctx, "x", "a", true)
	if err != nil {
		t.Fatal(err)
	}
	d.MoveConfirmations(t, sc.srv, sc.ns, -3_600_000)
	wctx, cancel := context.WithTimeout(ctx, 4*lockTimeout)
	defer cancel()
	errs := make(chan error, 2)
	for _, s := range sc.stores[1:] {
		go func() {
			_, err := s.Lock(wctx, "x", "w", true)
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a waiter's Lock while the holder confirms: %v, want a deadline", err)
		}
	}
	if closed(la.Lost()) {
		t.Fatalf("a confirming holder lost its hold: %v", lostErr(la))
	}
	if err := la.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// clockStep: a step of the database server's clock never gives two
// holders, and never keeps a dead holder's lock. The stored confirmation
// times are moved as a step would move them relative to the server's
// clock: back by a minute (a forward step: to a rule that compares them
// with the clock, the holder is long expired), then forward by an hour (a
// backward step) while the holder's network is silent.
func clockStep(t *testing.T, d Dialect) {
	const lockTimeout = 2 * time.Second
	sc := parallelScene(t, d, lockTimeout, 2, true)
	p, a, b := sc.p, sc.stores[0], sc.stores[1]
	ctx := t.Context()
	la, err := a.Lock(ctx, "x", "a", true)
	if err != nil {
		t.Fatal(err)
	}

	// Forward: the holder confirms all along, so nobody else may hold.
	d.MoveConfirmations(t, sc.srv, sc.ns, -60_000)
	bctx, cancel := context.WithTimeout(ctx, 3*lockTimeout)
	lb, err := b.Lock(bctx, "x", "b", true)
	cancel()
	if err == nil {
		if !closed(la.Lost()) {
			t.Fatalf("after a forward clock step, store b was granted fence %d while a held fence %d with its Lost open", lb.Fence(), la.Fence())
		}
		t.Fatalf("after a forward clock step, a live holder lost its hold to store b")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("b's Lock while a holds: %v, want a deadline", err)
	}
	if closed(la.Lost()) {
		t.Fatalf("a live holder lost its hold after a forward clock step")
	}

	// Backward, then the holder goes silent: taken over within a bound,
	// after its Lost.
	d.MoveConfirmations(t, sc.srv, sc.ns, 3_600_000)
	p.Freeze()
	defer p.Thaw()
	start := time.Now()
	bctx, cancel = context.WithTimeout(ctx, 5*lockTimeout)
	defer cancel()
	lb, err = b.Lock(bctx, "x", "b", true)
	if err != nil {
		t.Fatalf("after a backward clock step, the silent holder's lock was not taken over within %v: %v", 5*lockTimeout, err)
	}
	if !closed(la.Lost()) {
		t.Fatalf("b was granted the lock %v after a's network went silent, with a's Lost still open", time.Since(start))
	}
	t.Logf("taken over %v after the holder went silent", time.Since(start))
	if err := lb.Unlock(ctx); err != nil {
		t.Error(err)
	}
}
