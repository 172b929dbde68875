package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/poll"
)

// TestSealBeatsAcquireUnderRepeatableRead: a database whose default
// isolation is repeatable read (an operator's ALTER DATABASE or ROLE ...
// SET default_transaction_isolation, or a connection string that sets it)
// must not let a term start after SealNamespace returned. The seal locks
// the namespace table and an Acquire queued behind that lock reads the
// seal only if its snapshot is taken after the wait, as in read committed;
// in repeatable read the snapshot was taken before the wait (the first
// statement's), so the Acquire read the namespace unsealed and started a
// term once the seal had returned.
func TestSealBeatsAcquireUnderRepeatableRead(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	schema := freshSchema("sealrr")
	opts := map[string]string{"lockTimeout": "30s"} // no lock wait ends on its own here
	rr := srv.ConnString() + " default_transaction_isolation='repeatable read'"
	a := openAt(t, rr, schema, opts)
	sealer := openAt(t, srv.ConnString(), schema, opts)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ns := driver.Namespace{Name: "w", Limit: 4, Tolerance: 100 * time.Millisecond}
	req := driver.AcquireRequest{Namespace: ns, Owner: "x", Incarnation: "1", TTL: time.Minute, Preferred: -1}
	if _, err := sealer.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "first", Incarnation: "1", TTL: time.Minute, Preferred: -1}); err != nil {
		t.Fatal(err)
	}

	// A reader of the namespace table holds the seal back, so that the
	// Acquire queues behind the seal's lock.
	holder := superuser(t, srv)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+pgx.Identifier{schema}.Sanitize()+`.cosid_namespace`); err != nil {
		t.Fatal(err)
	}
	watcher := superuser(t, srv)
	waiting := func(n int, what string) {
		poll.Succeeds(t, 30*time.Second, what, func() error {
			var got int
			err := watcher.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE wait_event_type = 'Lock' AND query LIKE $1`, "%"+schema+"%cosid_namespace%").Scan(&got)
			if err != nil {
				return err
			}
			if got < n {
				return fmt.Errorf("%d statements wait for a lock on the namespace table, want %d", got, n)
			}
			return nil
		})
	}
	sealed := make(chan error, 1)
	go func() { sealed <- sealer.SealNamespace(ctx, "w") }()
	waiting(1, "the seal waits for the reader")
	type result struct {
		l   driver.Lease
		err error
	}
	acquired := make(chan result, 1)
	go func() {
		l, err := a.Acquire(ctx, req)
		acquired <- result{l, err}
	}()
	waiting(2, "the Acquire waits behind the seal")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-sealed; err != nil {
		t.Fatalf("SealNamespace: %v", err)
	}
	r := <-acquired
	if !errors.Is(r.err, driver.ErrSealed) {
		t.Fatalf("an Acquire queued behind SealNamespace, which has returned: %+v, %v; want ErrSealed (no term starts after the seal)", r.l, r.err)
	}
}
