package postgres

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/pgtest"
)

// TestFailedLockCostsItself: a store holding "a" calls Lock("b") with a
// context already cancelled, then with a deadline that ends inside the
// enqueue transaction (between its INSERT and COMMIT). Each fails with its
// context's error and nothing else: "a" stays held (Lost open, Unlock
// succeeds) and "b" is left free for another store.
func TestFailedLockCostsItself(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	schema := freshSchema("lockfail")
	s := openAt(t, srv.ConnString(), schema, map[string]string{"lockTimeout": "2s"})
	other := openAt(t, srv.ConnString(), schema, map[string]string{"lockTimeout": "2s"})
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
	short, cancel := context.WithTimeout(ctx, time.Hour)
	var once sync.Once
	setHook(s, func(point string) {
		if point == "enqueue" {
			once.Do(func() {
				cancel() // the context ends between the INSERT and the COMMIT
			})
		}
	})
	if _, err := s.Lock(short, "b", "s", true); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock whose context ends inside the enqueue: %v, want context.Canceled", err)
	}
	// A store's holds end at its lock session's end: wait past a
	// confirmation or two, so that a session given up would show.
	select {
	case <-time.After(2 * time.Second):
	case <-la.Lost():
	}
	if closed(la.Lost()) {
		t.Fatalf("the hold of \"a\" was lost after a failed Lock of \"b\": %v", la.(*hold).LostErr())
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

// TestLockWhileSessionStarts: a Lock keeps to its context while another
// Lock of the store is starting the lock session (here, on a network that
// does not answer).
func TestLockWhileSessionStarts(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	p := pgtest.NewProxy(t, srv.Addr())
	s := openAt(t, pgtest.ConnStringAt(p.Addr()), freshSchema("start"), map[string]string{"connectTimeout": "10s"})
	ctx := t.Context()
	before := p.Conns()
	p.Freeze()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer p.Thaw()
	first, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Go(func() { _, _ = s.Lock(first, "x", "first", true) })
	deadline := time.Now().Add(10 * time.Second)
	for p.Conns() == before { // the session's connection is being made
		if time.Now().After(deadline) {
			t.Fatal("the first Lock made no connection")
		}
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	short, scancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer scancel()
	_, err := s.Lock(short, "y", "second", true)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second Lock: %v, want a deadline", err)
	}
	// Waiting behind the first Lock would take its connectTimeout (10s);
	// half of it leaves a loaded machine room (1s did not, at load 30).
	if took > 5*time.Second {
		t.Errorf("second Lock with a 100ms context took %v while another Lock started the session", took)
	}
}

// TestLockCommitInFlight: a Lock whose context ends while its enqueue's
// COMMIT is held in a silent network returns; the COMMIT then reaches the
// server (the network comes back before the server's idle bound). The row
// it committed must not stay: the store's removal waits for it, so the
// name is free again for another store, and the store's other hold stays.
func TestLockCommitInFlight(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	schema := freshSchema("inflight")
	p := pgtest.NewProxy(t, srv.Addr())
	opts := map[string]string{"lockTimeout": "4s"} // the server's idle bound: 1s
	a := openAt(t, pgtest.ConnStringAt(p.Addr()), schema, opts)
	b := openAt(t, srv.ConnString(), schema, opts)
	ctx := t.Context()
	held, err := a.Lock(ctx, "held", "a", true)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	setHook(a, func(point string) {
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
		t.Fatalf("a's other hold was lost: %v", held.(*hold).LostErr())
	}
	if err := lb.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
