package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/pgtest"
)

// TestPurgeWhileWaiting: an operator purges the store while one store
// holds "x" and another waits for it. The waiter is never granted (its row
// went with the purge: ErrLeaseLost), the holder's Lost closes within its
// lock timeout, and a store locking afterwards gets a fence above both.
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
	if _, err := op.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-waited
	if r.err == nil {
		t.Fatalf("b was granted fence %d after the purge deleted its row", r.l.Fence())
	}
	if !errors.Is(r.err, driver.ErrLeaseLost) {
		t.Errorf("b's Lock after the purge: %v, want ErrLeaseLost", r.err)
	}
	select {
	case <-held.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("a's Lost still open 10 s after its session row was purged (lock timeout 2s)")
	}
	c, err := op.Lock(ctx, "x", "op", true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Fence() <= held.Fence() {
		t.Errorf("fence %d after the purge, a held %d", c.Fence(), held.Fence())
	}
	if err := c.Unlock(ctx); err != nil {
		t.Error(err)
	}
	if err := held.Unlock(ctx); !errors.Is(err, driver.ErrLeaseLost) {
		t.Errorf("a's Unlock after the purge: %v, want ErrLeaseLost", err)
	}
}
