package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/internal/testing/pgtest"
)

// TestLockClockStep: a step of the database server's clock never gives
// two holders, and never keeps a dead holder's lock. The stored
// confirmation times are moved as a step would move them relative to the
// server's clock: back by a minute (a forward step: to a rule that compares
// them with the clock, the holder is long expired), then forward by an
// hour (a backward step) while the holder's network is silent.
func TestLockClockStep(t *testing.T) {
	t.Parallel()
	const lockTimeout = 2 * time.Second
	opts := map[string]string{"lockTimeout": lockTimeout.String()}
	srv := pgtest.Shared(t)
	schema := freshSchema("clock")
	p := pgtest.NewProxy(t, srv.Addr())
	a := openAt(t, pgtest.ConnStringAt(p.Addr()), schema, opts)
	b := openAt(t, srv.ConnString(), schema, opts)
	su := superuser(t, srv)
	ctx := t.Context()
	move := func(ms int64) {
		t.Helper()
		if _, err := su.Exec(ctx, `UPDATE `+pgx.Identifier{schema}.Sanitize()+`.cosid_lock_session SET confirmed_at = confirmed_at + $1`, ms); err != nil {
			t.Fatal(err)
		}
	}
	la, err := a.Lock(ctx, "x", "a", true)
	if err != nil {
		t.Fatal(err)
	}

	// Forward: the holder confirms all along, so nobody else may hold.
	move(-60_000)
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
	move(3_600_000)
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
