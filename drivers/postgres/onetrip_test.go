package postgres

import (
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/pgtest"
)

// TestTxStatementsFirstRun: a statement of a transaction (an Acquire's, a
// Renew's) that its connection runs for the first time goes in one round
// trip, not prepared first in a round trip of its own: a fleet's
// instances, each on a new connection, run each of them once (issue 40's
// fleet restart). Run again, it is prepared and kept. Counted as the
// statements the connection (the store's pool of one) holds prepared.
func TestTxStatementsFirstRun(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	schema := freshSchema("onetrip")
	ns := driver.Namespace{Name: "w", Limit: 8, Tolerance: time.Second}
	req := func(owner string) driver.AcquireRequest {
		return driver.AcquireRequest{Namespace: ns, Owner: owner, Incarnation: "1", TTL: time.Minute, Preferred: -1}
	}
	ctx := t.Context()
	// Another store creates the namespace, so that s's first Acquire
	// runs each of its statements once.
	if _, err := openAt(t, srv.ConnString(), schema, nil).Acquire(ctx, req("x")); err != nil {
		t.Fatal(err)
	}
	s := openAt(t, srv.ConnString(), schema, map[string]string{"poolSize": "1"})
	prepared := func() int {
		var n int
		if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM pg_prepared_statements").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := prepared()
	l, err := s.Acquire(ctx, req("a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Renew(ctx, l); err != nil {
		t.Fatal(err)
	}
	if n := prepared(); n != before {
		t.Errorf("the connection holds %d prepared statements after an Acquire and a Renew, %d before: want none prepared at their first run", n, before)
	}
	if _, err := s.Acquire(ctx, req("b")); err != nil {
		t.Fatal(err)
	}
	if n := prepared(); n <= before {
		t.Errorf("the connection holds %d prepared statements after a second Acquire, %d before: want those run again prepared", n, before)
	}
}
