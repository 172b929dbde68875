package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/pgtest"
)

// TestAcquireOppositeOrder forces two acquirers to lock rows in opposite
// orders: x's preferred slot is y's live term and y's preferred is x's,
// neither listed in its owner index, so each locks the other's slot first
// and then finds its own in the search. Each must get its own slot back
// (no deadlock error): the search never waits on a row while holding
// others, and an aborted transaction is tried again.
func TestAcquireOppositeOrder(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	schema := freshSchema("order")
	ns := driver.Namespace{Name: "w", Limit: 2, Tolerance: 100 * time.Millisecond}
	x := openAt(t, srv.ConnString(), schema, nil)
	y := openAt(t, srv.ConnString(), schema, nil)
	ctx := t.Context()
	req := func(owner string, preferred int) driver.AcquireRequest {
		return driver.AcquireRequest{Namespace: ns, Owner: owner, Incarnation: "1", TTL: time.Minute, Preferred: preferred}
	}
	for _, r := range []driver.AcquireRequest{req("x", 0), req("y", 1)} {
		if l, err := x.Acquire(ctx, r); err != nil || l.Slot != r.Preferred {
			t.Fatalf("setup: %v, %v", l, err)
		}
	}
	if _, err := superuser(t, srv).Exec(ctx, `DELETE FROM `+pgx.Identifier{schema}.Sanitize()+`.cosid_owner`); err != nil {
		t.Fatal(err)
	}
	// Both hold their first row lock before either searches.
	var barrier sync.WaitGroup
	barrier.Add(2)
	for _, s := range []*driverStore{x, y} {
		var once sync.Once
		setHook(s, func(point string) {
			if strings.Contains(point, "slot IN (") {
				once.Do(func() {
					barrier.Done()
					done := make(chan struct{})
					go func() { barrier.Wait(); close(done) }()
					select {
					case <-done:
					case <-time.After(10 * time.Second):
					}
				})
			}
		})
	}
	type result struct {
		l   driver.Lease
		err error
	}
	results := make([]result, 2)
	var wg sync.WaitGroup
	for i, c := range []struct {
		s *driverStore
		r driver.AcquireRequest
	}{{x, req("x", 1)}, {y, req("y", 0)}} {
		wg.Go(func() {
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			l, err := c.s.Acquire(actx, c.r)
			results[i] = result{l, err}
		})
	}
	wg.Wait()
	for i, want := range []int{0, 1} {
		if r := results[i]; r.err != nil || r.l.Slot != want {
			t.Errorf("acquirer %d: slot %d, %v; want its own slot %d", i, r.l.Slot, r.err, want)
		}
	}
}

// TestAcquireStorm: 40 acquirers on 4 stores, with preferred slots and
// owner indexes pointing every way (and reclaims), lease and release a namespace with
// fewer slots than acquirers. Each Acquire gets a slot or ErrExhausted,
// never a database error (a deadlock, a lock timeout).
func TestAcquireStorm(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	schema := freshSchema("storm")
	ns := driver.Namespace{Name: "w", Limit: 8, Tolerance: 10 * time.Millisecond}
	stores := make([]*driverStore, 4)
	for i := range stores {
		stores[i] = openAt(t, srv.ConnString(), schema, map[string]string{"poolSize": "10"})
	}
	ctx := t.Context()
	var wg sync.WaitGroup
	var mu sync.Mutex
	got, exhausted := 0, 0
	for g := range 40 {
		wg.Go(func() {
			s := stores[g%len(stores)]
			for i := range 5 {
				actx, cancel := context.WithTimeout(ctx, 20*time.Second)
				l, err := s.Acquire(actx, driver.AcquireRequest{Namespace: ns, Owner: fmt.Sprintf("o%d", g%12),
					Incarnation: fmt.Sprint(g), TTL: time.Minute, Preferred: (g*7 + i*3) % ns.Limit, Reclaim: g%3 == 0})
				if err == nil {
					// A reclaim by another incarnation of the owner may
					// have taken the slot: that is a lost lease, not a
					// failure.
					if rerr := s.Release(actx, l, -1); rerr != nil && !errors.Is(rerr, driver.ErrLeaseLost) {
						err = rerr
					}
				}
				cancel()
				mu.Lock()
				switch {
				case err == nil:
					got++
				case errors.Is(err, driver.ErrExhausted):
					exhausted++
				default:
					t.Errorf("acquirer %d: %v", g, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("%d leased and released, %d exhausted", got, exhausted)
	if got == 0 {
		t.Error("no acquire succeeded")
	}
}
