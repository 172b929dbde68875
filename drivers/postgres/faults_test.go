package postgres

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/rangecheck"
)

// TestFaults is the proof under faults: 8 stores, each reaching the server
// through proxies of its own, allocate ranges of two keys, lease slots and
// contend for one lock at once, while the server is killed and restarted,
// a store's connections are cut mid-statement, the lock holder's network
// goes silent for longer than the lock timeout, and backends are
// terminated with pg_terminate_backend, and the database's clock steps
// forward and back. Every range, lease and hold is collected: no value
// twice; per slot, fences strictly grow and no term's
// floor is below a previous term's ceiling; the lock is never granted
// while another hold is neither given back nor lost (see exclusion).
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 15s to a minute with a server of its own")
	}
	srv := pgtest.Start(t)
	schema := freshSchema("faults")
	// The database clock of every store is the server's plus a step the
	// faults change (this test runs alone, so no other store sees it).
	su := superuser(t, srv)
	if _, err := su.Exec(t.Context(), `CREATE TABLE public.cosid_test_step (ms BIGINT NOT NULL); INSERT INTO public.cosid_test_step VALUES (0)`); err != nil {
		t.Fatal(err)
	}
	defer func(c string) { clockSQL = c }(clockSQL)
	clockSQL = "(" + clockSQL + " + (SELECT ms FROM public.cosid_test_step))"
	const n = 8
	stores := make([]*driverStore, n)
	proxies := make([]*pgtest.Proxy, n)
	freezers := make([]*pgtest.Proxy, n)
	for i := range n {
		// store -> freeze proxy -> cut proxy -> server
		proxies[i] = pgtest.NewProxy(t, srv.Addr())
		freezers[i] = pgtest.NewProxy(t, proxies[i].Addr())
		stores[i] = openAt(t, pgtest.ConnStringAt(freezers[i].Addr()), schema,
			map[string]string{"connectTimeout": "2s", "lockTimeout": "1s"})
	}
	ns := driver.Namespace{Name: "w", Limit: 4, Tolerance: 50 * time.Millisecond}
	ctx, stop := context.WithCancel(t.Context())
	w := &faultWork{t: t, ns: ns, ranges: map[string]*rangecheck.Handed{"a": {}, "b": {}}, terms: map[int]map[int64]*term{}}
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() { w.rangesAndLeases(ctx, i, s) })
	}
	ex := &exclusion{t: t}
	for i, s := range stores {
		wg.Go(func() { ex.work(ctx, i, s) })
	}
	// The clock steps forward by twice the lock timeout, or back by one:
	// lock takeovers must not care, and slot terms stay disjoint by their
	// floors and ceilings.
	stepClock := func(ms int64) {
		err := srv.Exec(t, func(c *pgx.Conn) error {
			_, err := c.Exec(t.Context(), `UPDATE public.cosid_test_step SET ms = ms + $1`, ms)
			return err
		})
		if err != nil {
			t.Fatalf("step the clock: %v", err)
		}
	}
	schedule := pgtest.Faults{Server: srv, Cut: proxies, Silent: freezers, Holder: ex.holder, StepClock: stepClock}.
		Schedule(t, rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1)))
	schedule.More = func() bool { return !enough(w.counts()) || ex.count() < minHolds }
	faults := schedule.Run(t, 15*time.Second)
	stop()
	wg.Wait()

	total := 0
	for _, h := range w.ranges {
		total += len(h.Check(t))
	}
	nterms := w.checkTerms()
	var errs []string
	w.failures.Range(func(k, _ any) bool { errs = append(errs, k.(string)); return len(errs) < 5 })
	t.Logf("faults: %v; %d ranges, %d lease terms and %d lock holds (%d of them lost) collected; some failures seen: %q",
		faults, total, nterms, ex.holds, ex.lost, errs)
	if !enough(total, nterms) || ex.holds < minHolds {
		t.Errorf("too little work done under faults to prove anything: %d ranges, %d terms, %d holds", total, nterms, ex.holds)
	}
}

// faultWork is the ranges and leases part of TestFaults: what the stores
// were handed, collected.
type faultWork struct {
	t        *testing.T
	ns       driver.Namespace
	ranges   map[string]*rangecheck.Handed // by key
	mu       sync.Mutex
	terms    map[int]map[int64]*term // by slot and fence
	failures sync.Map                // error text -> true
}

type term struct {
	who            int
	floor, ceiling int64
}

// rangesAndLeases is store i's work until ctx ends: Next on keys a and b in
// turn, and every fourth round a lease acquired, renewed, and (every
// eighth) released.
func (w *faultWork) rangesAndLeases(ctx context.Context, i int, s *driverStore) {
	for j := 0; ctx.Err() == nil; j++ {
		key := []string{"a", "b"}[j%2]
		step := int64(1 + j%5)
		octx, cancel := context.WithTimeout(ctx, 3*time.Second)
		start, err := s.Next(octx, key, step)
		cancel()
		if err == nil {
			w.ranges[key].Add(i, store.Range{Start: start, End: start + step})
		} else {
			w.failures.Store(err.Error(), true)
		}
		if j%4 != 0 {
			continue
		}
		octx, cancel = context.WithTimeout(ctx, 3*time.Second)
		l, err := s.Acquire(octx, driver.AcquireRequest{Namespace: w.ns, Owner: fmt.Sprintf("s%d", i),
			Incarnation: "x", TTL: 300 * time.Millisecond, Preferred: j % 4})
		if err == nil {
			w.seen(i, l)
			if l2, err := s.Renew(octx, l); err == nil {
				w.seen(i, l2)
				l = l2
			}
			if j%8 == 0 {
				_ = s.Release(octx, l, -1)
			}
		}
		cancel()
	}
}

// seen records a lease store i holds: one term (slot and fence) is one
// holder's, with one floor.
func (w *faultWork) seen(i int, l driver.Lease) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.terms[l.Slot] == nil {
		w.terms[l.Slot] = map[int64]*term{}
	}
	tm := w.terms[l.Slot][l.Fence]
	if tm == nil {
		w.terms[l.Slot][l.Fence] = &term{who: i, floor: l.Floor, ceiling: l.Ceiling}
		return
	}
	if tm.who != i || tm.floor != l.Floor {
		w.t.Errorf("slot %d fence %d: held by store %d (floor %d) and store %d (floor %d)", l.Slot, l.Fence, tm.who, tm.floor, i, l.Floor)
	}
	tm.ceiling = max(tm.ceiling, l.Ceiling)
}

// checkTerms checks that, per slot, no term's floor is below the ceiling
// of the term before it (by fence), and returns how many terms there were.
func (w *faultWork) checkTerms() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for slot, ts := range w.terms {
		fences := slices.Sorted(maps.Keys(ts))
		n += len(fences)
		for i := 1; i < len(fences); i++ {
			prev, cur := ts[fences[i-1]], ts[fences[i]]
			if cur.floor < prev.ceiling {
				w.t.Errorf("slot %d: fence %d (store %d) floor %d below fence %d's (store %d) ceiling %d",
					slot, fences[i], cur.who, cur.floor, fences[i-1], prev.who, prev.ceiling)
			}
		}
	}
	return n
}

// The least work under faults that proves something.
const minRanges, minTerms, minHolds = 200, 10, 5

func enough(ranges, terms int) bool { return ranges >= minRanges && terms >= minTerms }

// counts returns the ranges and lease terms collected so far.
func (w *faultWork) counts() (ranges, terms int) {
	for _, h := range w.ranges {
		ranges += h.Len()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ts := range w.terms {
		terms += len(ts)
	}
	return ranges, terms
}

// count returns the holds granted so far.
func (ex *exclusion) count() int {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.holds
}

// exclusion checks that a lock is never granted while another store's
// hold may still be in use: neither lost (Lost closed) nor being given
// back (its holder has called Unlock, so it uses the lock no more, whatever
// the Unlock's outcome).
type exclusion struct {
	t           *testing.T
	mu          sync.Mutex
	cur         *heldBy // the last hold granted, until its holder calls Unlock
	fence       int64
	holds, lost int
}

type heldBy struct {
	l     driver.Lock
	store int
}

func (ex *exclusion) work(ctx context.Context, i int, s *driverStore) {
	for ctx.Err() == nil {
		octx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, err := s.Lock(octx, "x", fmt.Sprintf("s%d", i), true)
		cancel()
		if err != nil {
			continue
		}
		h := ex.granted(i, l)
		// Hold it longer than the lock timeout, so that a silenced network
		// finds a holder that still uses its hold when another may take it.
		select {
		case <-l.Lost():
		case <-time.After(1500 * time.Millisecond):
		}
		ex.mu.Lock()
		if closed(l.Lost()) {
			ex.lost++
		}
		if ex.cur == h {
			ex.cur = nil
		}
		ex.mu.Unlock()
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = l.Unlock(uctx)
		cancel()
	}
}

func (ex *exclusion) granted(i int, l driver.Lock) *heldBy {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	ex.holds++
	if c := ex.cur; c != nil && !closed(c.l.Lost()) {
		ex.t.Errorf("store %d was granted the lock (fence %d) while store %d held fence %d and its Lost was still open",
			i, l.Fence(), c.store, c.l.Fence())
	}
	if l.Fence() <= ex.fence {
		ex.t.Errorf("store %d was granted fence %d, not above %d granted before", i, l.Fence(), ex.fence)
	}
	h := &heldBy{l: l, store: i}
	ex.cur, ex.fence = h, l.Fence()
	return h
}

// holder returns the store holding the lock, or -1.
func (ex *exclusion) holder() int {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.cur == nil {
		return -1
	}
	return ex.cur.store
}
