package postgres

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/rawdriver"
	"github.com/cosid-go/store/internal/testing/sqllocks"
)

// openAt opens a store on connString and schema, closed when the test ends.
func openAt(t *testing.T, connString, schema string, extra map[string]string) *driverStore {
	t.Helper()
	o := map[string]string{"connString": connString, "schema": schema, "poolSize": "4"}
	return rawdriver.Open[*driverStore](t, fromOptions, o, extra)
}

// TestLockScenarios runs the lock scenarios both SQL drivers share
// (package sqllocks) on PostgreSQL.
func TestLockScenarios(t *testing.T) {
	sqllocks.Run(t, sqllocks.Dialect{
		Shared:    func(t testing.TB) sqllocks.Server { return pgtest.Shared(t) },
		Start:     func(t testing.TB) sqllocks.Server { return pgtest.Start(t) },
		Namespace: func(testing.TB, sqllocks.Server) string { return freshSchema("locks") },
		Open: func(t *testing.T, addr, schema string, extra map[string]string) sqllocks.Store {
			return openAt(t, pgtest.ConnStringAt(addr), schema, extra)
		},
		SetHook: func(s sqllocks.Store, f func(string)) { setHook(s.(*driverStore), f) },
		// Its backend terminated, as pg_terminate_backend by an operator.
		KillSession: func(t *testing.T, srv sqllocks.Server, schema string, s sqllocks.Store) {
			var n int
			err := superuser(t, srv.(*pgtest.Server)).QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM `+
				pgx.Identifier{schema}.Sanitize()+`.cosid_lock_session WHERE id = $1`, s.(*driverStore).locks.Current().id).Scan(&n)
			if err != nil || n != 1 {
				t.Fatalf("pg_terminate_backend: %d, %v", n, err)
			}
		},
		KillSessionName: "backend terminated",
		MoveConfirmations: func(t *testing.T, srv sqllocks.Server, schema string, ms int64) {
			if _, err := superuser(t, srv.(*pgtest.Server)).Exec(t.Context(), `UPDATE `+pgx.Identifier{schema}.Sanitize()+
				`.cosid_lock_session SET confirmed_at = confirmed_at + $1`, ms); err != nil {
				t.Fatal(err)
			}
		},
		InFlightLockTimeout: 4 * time.Second, // the server's idle bound: 1s
		SessionID:           sessionID,
		Dump:                dumpSchema,
		TakeoverWithin:      20 * time.Second,
	})
}

// superuser connects to srv as the superuser until the test ends.
func superuser(t *testing.T, srv *pgtest.Server) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(t.Context(), srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// TestLockNoHerd: an Unlock wakes the next waiter only; the others stay
// asleep (no pass over the queue), and the lock goes in arrival order.
func TestLockNoHerd(t *testing.T) {
	srv := pgtest.Shared(t)
	schema := freshSchema("herd")
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	holder := openAt(t, srv.ConnString(), schema, nil)
	first, err := holder.Lock(ctx, "x", "holder", true)
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	waiters := make([]*driverStore, n)
	passes := make([]atomic.Int64, n) // each waiter's passes over the queue
	got := make(chan int, n)
	for i := range waiters {
		waiters[i] = openAt(t, srv.ConnString(), schema, nil)
		setHook(waiters[i], func(point string) {
			if point == "pass" {
				passes[i].Add(1)
			}
		})
		wg.Go(func() {
			l, err := waiters[i].Lock(ctx, "x", "w", true)
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("waiter %d: %v", i, err)
				}
				got <- -1
				return
			}
			got <- i
			<-ctx.Done()
			_ = l.Unlock(context.Background())
		})
		// Queue them one after the other: arrival order is the order.
		deadline := time.Now().Add(10 * time.Second)
		for {
			ws, err := holder.Waiters(ctx, "x")
			if err == nil && len(ws) == i+2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiter %d did not queue: %v %v", i, ws, err)
			}
			time.Sleep(5 * time.Millisecond) // state only visible in the database
		}
	}
	// Queued is not yet asleep: a waiter's first pass over the queue comes
	// after its row is visible. Count from once each has begun it (a pass
	// counts at its start; after it the waiter sleeps).
	before := make([]int64, n)
	for i := range waiters {
		deadline := time.Now().Add(10 * time.Second)
		for passes[i].Load() == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("waiter %d made no pass over the queue", i)
			}
			time.Sleep(5 * time.Millisecond) // the Lock call's own progress, not an event it reports
		}
		before[i] = passes[i].Load()
	}
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if i := <-got; i != 0 {
		t.Fatalf("waiter %d got the lock first, want waiter 0", i)
	}
	for i := 1; i < n; i++ {
		if d := passes[i].Load() - before[i]; d != 0 {
			t.Errorf("waiter %d ran %d passes when the holder unlocked; only waiter 0 should wake", i, d)
		}
	}
}

// TestLockAfterPurge: a store whose lock session a purge deleted, holding
// nothing, locks again at once: the purge loses holds, not later calls.
// (Found by the TCK's random histories: the Lock failed with ErrLeaseLost.)
func TestLockAfterPurge(t *testing.T) {
	srv := pgtest.Shared(t)
	schema := freshSchema("purgelock")
	a := openAt(t, srv.ConnString(), schema, nil)
	b := openAt(t, srv.ConnString(), schema, nil)
	ctx := t.Context()
	k, err := a.Lock(ctx, "before", "a", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	k, err = a.Lock(ctx, "after", "a", false)
	if err != nil {
		t.Fatalf("Lock after a purge, holding nothing: %v", err)
	}
	if err := k.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
