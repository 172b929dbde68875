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
