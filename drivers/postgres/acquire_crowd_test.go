package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/pgtest"
)

// TestAcquirePreferredHeld: while another transaction holds the row of the
// preferred slot (slot 0, every Acquire's default), an Acquire passes over
// it and takes another free slot at once. It used to wait for that
// transaction to end, so a fleet acquiring at once queued, one transaction
// after another, on slot 0's row (issue 40's fleet restart).
func TestAcquirePreferredHeld(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	schema := freshSchema("prefheld")
	ns := driver.Namespace{Name: "w", Limit: 4, Tolerance: 100 * time.Millisecond}
	x := openAt(t, srv.ConnString(), schema, nil)
	ctx := t.Context()
	req := func(owner string) driver.AcquireRequest {
		return driver.AcquireRequest{Namespace: ns, Owner: owner, Incarnation: "1", TTL: time.Minute}
	}
	l, err := x.Acquire(ctx, req("first"))
	if err != nil || l.Slot != 0 {
		t.Fatalf("first acquire: %v, %v; want slot 0", l, err)
	}
	if err := x.Release(ctx, l, -1); err != nil {
		t.Fatal(err)
	}
	// A transaction holding slot 0's row, as an acquire taking it does.
	tx, err := superuser(t, srv).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+pgx.Identifier{schema}.Sanitize()+`.cosid_slot WHERE namespace = 'w' AND slot = 0 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	// The store waits for a row lock up to its lockTimeout (10 s): a
	// bound well under it tells passing over from waiting.
	bounded, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	l2, err := x.Acquire(bounded, req("second"))
	if err != nil {
		t.Fatalf("acquire while slot 0's row is held: %v", err)
	}
	// Crowded, it searches from its own point (driver.SearchStart).
	if l2.Slot == 0 {
		t.Errorf("acquire while slot 0's row is held got slot 0")
	}
}
