package postgres

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/pgtest"
)

// TestRegressionGuard: a database that went back (restored from a backup,
// a replica promoted without the last commits; here, rows set back by
// hand) is refused with ErrCorrupt by a store that saw the later values,
// instead of handing out values, a slot term or a lock fence again.
func TestRegressionGuard(t *testing.T) {
	srv := pgtest.Shared(t)
	schema := freshSchema("guard")
	s := openAt(t, srv.ConnString(), schema, nil)
	c := superuser(t, srv)
	ctx := t.Context()
	exec := func(q string) {
		t.Helper()
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tbl := func(name string) string { return pgx.Identifier{schema, name}.Sanitize() }

	if _, err := s.Next(ctx, "k", 10); err != nil {
		t.Fatal(err)
	}
	exec(`UPDATE ` + tbl("cosid_range") + ` SET next = 5 WHERE key = 'k'`)
	if start, err := s.Next(ctx, "k", 10); !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("Next after the key went back from 10 to 5: start %d, err %v; want ErrCorrupt", start, err)
	}
	exec(`DELETE FROM ` + tbl("cosid_range") + ` WHERE key = 'k'`)
	if start, err := s.Next(ctx, "k", 10); !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("Next after the key vanished: start %d, err %v; want ErrCorrupt", start, err)
	}

	ns := driver.Namespace{Name: "w", Limit: 2, Tolerance: time.Millisecond}
	l, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "o", Incarnation: "i", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, l, -1); err != nil {
		t.Fatal(err)
	}
	if l, err = s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "o", Incarnation: "i", TTL: time.Minute}); err != nil || l.Fence != 2 {
		t.Fatalf("second term: %+v, %v", l, err)
	}
	exec(`UPDATE ` + tbl("cosid_slot") + ` SET fence = 1`)
	if _, err := s.Renew(ctx, l); !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("Renew after the slot's fence went back from 2 to 1: %v; want ErrCorrupt", err)
	}

	lk, err := s.Lock(ctx, "x", "o", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := lk.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	exec(`ALTER SEQUENCE ` + tbl("cosid_lock_ticket") + ` RESTART WITH 1`)
	if lk2, err := s.Lock(ctx, "x", "o", true); !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("Lock after the ticket sequence went back: %v; want ErrCorrupt", err)
		if lk2 != nil {
			_ = lk2.Unlock(ctx)
		}
	}
}
