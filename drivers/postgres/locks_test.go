package postgres

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/pgtest"
)

// openAt opens a store on connString and schema, closed when the test ends.
func openAt(t *testing.T, connString, schema string, extra map[string]string) *driverStore {
	t.Helper()
	o := map[string]string{"connString": connString, "schema": schema, "poolSize": "4"}
	for k, v := range extra {
		o[k] = v
	}
	d, err := fromOptions(o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	s := d.(*driverStore)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

type lockResult struct {
	l       driver.Lock
	err     error
	aLost   bool // whether the old holder's Lost was closed when this Lock returned
	granted time.Time
}

// TestLockLostBeforeTakeover proves the lock rule of docs/design.md (Locks on PostgreSQL):
// when the holder's session fails (its network goes silent, its backend is
// terminated, the server is killed and restarted), another store gets the
// lock, and only after the holder's Lost has closed.
func TestLockLostBeforeTakeover(t *testing.T) {
	const lockTimeout = 2 * time.Second
	opts := map[string]string{"lockTimeout": lockTimeout.String()}
	faults := []struct {
		name string
		// setup returns the holder's connection string and the fault.
		setup func(t *testing.T, srv *pgtest.Server, a func() *driverStore) (string, func())
		own   bool // needs a server of its own
	}{
		{"silent network", func(t *testing.T, srv *pgtest.Server, _ func() *driverStore) (string, func()) {
			p := pgtest.NewProxy(t, srv.Addr())
			return pgtest.ConnStringAt(p.Addr()), p.Freeze
		}, false},
		{"backend terminated", func(t *testing.T, srv *pgtest.Server, a func() *driverStore) (string, func()) {
			return srv.ConnString(), func() {
				c := superuser(t, srv)
				var n int
				err := c.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM `+
					pgx.Identifier{a().cfg.Schema}.Sanitize()+`.cosid_lock_session WHERE id = $1`, a().locks.Current().id).Scan(&n)
				if err != nil || n != 1 {
					t.Fatalf("pg_terminate_backend: %d, %v", n, err)
				}
			}
		}, false},
		{"server killed and restarted", func(t *testing.T, srv *pgtest.Server, _ func() *driverStore) (string, func()) {
			return srv.ConnString(), func() { srv.Kill(); srv.Restart(t) }
		}, true},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			var srv *pgtest.Server
			if f.own {
				srv = pgtest.Start(t)
			} else {
				t.Parallel()
				srv = pgtest.Shared(t)
			}
			schema := freshSchema("lost")
			var a *driverStore
			connA, fault := f.setup(t, srv, func() *driverStore { return a })
			a = openAt(t, connA, schema, opts)
			ctx := t.Context()
			la, err := a.Lock(ctx, "x", "a", true)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			fault()
			b := openAt(t, srv.ConnString(), schema, opts)
			ch := make(chan lockResult, 1)
			go func() {
				l, err := b.Lock(ctx, "x", "b", true)
				ch <- lockResult{l: l, err: err, aLost: closed(la.Lost()), granted: time.Now()}
			}()
			var r lockResult
			select {
			case r = <-ch:
			case <-time.After(10 * lockTimeout):
				t.Fatalf("the other store was not granted the lock within %v of the fault", 10*lockTimeout)
			}
			if r.err != nil {
				t.Fatalf("the other store's Lock: %v", r.err)
			}
			if !r.aLost {
				t.Fatalf("the other store was granted the lock %v after the fault while the holder's Lost was still open", r.granted.Sub(start))
			}
			if r.l.Fence() <= la.Fence() {
				t.Errorf("fence %d of the new holder is not above %d", r.l.Fence(), la.Fence())
			}
			t.Logf("granted to the other store %v after the fault", r.granted.Sub(start))
			if err := la.Unlock(ctx); !errors.Is(err, driver.ErrLeaseLost) {
				t.Errorf("Unlock of the lost hold: %v, want ErrLeaseLost", err)
			}
			if err := r.l.Unlock(ctx); err != nil {
				t.Errorf("Unlock of the new hold: %v", err)
			}
		})
	}
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
