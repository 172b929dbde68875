package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/pgtest"
)

// TestPurgeWhileWaiting: an operator purges the store while one store
// holds "x" and another waits for it. The purge is refused (ErrLocked):
// the hold stays, the waiter is granted once the holder unlocks, and the
// purge goes through after; a store locking then gets a fence above both.
func TestPurgeWhileWaiting(t *testing.T) {
	srv := pgtest.Shared(t)
	schema := freshSchema("purgewait")
	opts := map[string]string{"lockTimeout": "2s"}
	a := openAt(t, srv.ConnString(), schema, opts)
	b := openAt(t, srv.ConnString(), schema, opts)
	op := openAt(t, srv.ConnString(), schema, opts)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	held, err := a.Lock(ctx, "x", "a", true)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		l   driver.Lock
		err error
	}
	waited := make(chan result, 1)
	go func() {
		l, err := b.Lock(ctx, "x", "b", true)
		waited <- result{l, err}
	}()
	// Purge once b's row is queued behind a's.
	for {
		ws, err := op.Waiters(ctx, "x")
		if err != nil {
			t.Fatal(err)
		}
		if len(ws) == 2 {
			break
		}
		select {
		case r := <-waited:
			t.Fatalf("b's Lock ended while a held: %v %v", r.l, r.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := op.Purge(ctx); !errors.Is(err, driver.ErrLocked) {
		t.Fatalf("Purge while x is held and waited on: %v, want ErrLocked", err)
	}
	select {
	case <-held.Lost():
		t.Fatal("a's hold was lost by a refused purge")
	default:
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-waited
	if r.err != nil {
		t.Fatalf("b's Lock after a's Unlock: %v", r.err)
	}
	if err := r.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := op.Lock(ctx, "x", "op", true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Fence() <= r.l.Fence() {
		t.Errorf("fence %d after the purge, b held %d", c.Fence(), r.l.Fence())
	}
	if err := c.Unlock(ctx); err != nil {
		t.Error(err)
	}
}

// TestPurgeLiveLease: a purge while a lease is live deletes nothing and
// gives ErrLocked naming the slot; the lease renews after it, and once it
// is released the purge goes through. Then the race: one store takes
// leases in a loop while another purges; the purge locks the slot tables
// before it checks the terms, so no purge deletes a term that was live.
func TestPurgeLiveLease(t *testing.T) {
	srv := pgtest.Shared(t)
	schema := freshSchema("purgelease")
	a := openAt(t, srv.ConnString(), schema, nil)
	op := openAt(t, srv.ConnString(), schema, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req := driver.AcquireRequest{Namespace: driver.Namespace{Name: "workers", Limit: 2},
		Owner: "a", Incarnation: "run", TTL: time.Minute}
	l, err := a.Acquire(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	deleted, err := op.Purge(ctx)
	if !errors.Is(err, driver.ErrLocked) || len(deleted) != 0 || !strings.Contains(fmt.Sprint(err), "workers/0") {
		t.Fatalf("Purge with a live lease: deleted %q, %v; want nothing deleted, ErrLocked naming workers/0", deleted, err)
	}
	if l, err = a.Renew(ctx, l); err != nil {
		t.Fatalf("Renew after the refused purge: %v", err)
	}
	if err := a.Release(ctx, l, l.Floor); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Purge(ctx); err != nil {
		t.Fatalf("Purge once the lease is released: %v", err)
	}
	// The race of a purge with a live lease: the TCK's Purge/LiveLeaseRace.
}
