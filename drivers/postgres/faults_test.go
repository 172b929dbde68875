package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/pgtest"
)

// TestFaults is the never-twice and lease proof under faults: 8 stores,
// each reaching the server through a proxy of its own, allocate ranges of
// two keys and lease slots at once while the server is killed and
// restarted, a store's connections are cut mid-statement, and backends
// are terminated with pg_terminate_backend. Every range handed out and
// every lease seen is collected: no value twice, fences strictly growing
// per slot, and no term's floor below a previous term's ceiling.
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about 15s with a server of its own")
	}
	srv := pgtest.Start(t)
	schema := freshSchema("faults")
	const n = 8
	stores := make([]*Store, n)
	proxies := make([]*pgtest.Proxy, n)
	for i := range n {
		proxies[i] = pgtest.NewProxy(t, srv.Addr())
		stores[i] = openAt(t, pgtest.ConnStringAt(proxies[i].Addr()), schema, map[string]string{"connectTimeout": "2s"})
	}
	ns := driver.Namespace{Name: "w", Limit: 4, Tolerance: 50 * time.Millisecond}
	ctx, stop := context.WithCancel(t.Context())
	var mu sync.Mutex
	type rng struct{ start, end int64 }
	ranges := map[string][]rng{}
	type term struct {
		who            int
		floor, ceiling int64
	}
	terms := map[int]map[int64]*term{}
	seen := func(i int, l driver.Lease) {
		mu.Lock()
		defer mu.Unlock()
		if terms[l.Slot] == nil {
			terms[l.Slot] = map[int64]*term{}
		}
		tm := terms[l.Slot][l.Fence]
		if tm == nil {
			terms[l.Slot][l.Fence] = &term{who: i, floor: l.Floor, ceiling: l.Ceiling}
			return
		}
		if tm.who != i || tm.floor != l.Floor {
			t.Errorf("slot %d fence %d: held by store %d (floor %d) and store %d (floor %d)", l.Slot, l.Fence, tm.who, tm.floor, i, l.Floor)
		}
		tm.ceiling = max(tm.ceiling, l.Ceiling)
	}
	var failures sync.Map
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			for j := 0; ctx.Err() == nil; j++ {
				key := []string{"a", "b"}[j%2]
				step := int64(1 + j%5)
				octx, cancel := context.WithTimeout(ctx, 3*time.Second)
				start, err := s.Next(octx, key, step)
				cancel()
				if err == nil {
					mu.Lock()
					ranges[key] = append(ranges[key], rng{start, start + step})
					mu.Unlock()
				} else {
					failures.Store(err.Error(), true)
				}
				if j%4 != 0 {
					continue
				}
				octx, cancel = context.WithTimeout(ctx, 3*time.Second)
				l, err := s.Acquire(octx, driver.AcquireRequest{Namespace: ns, Owner: fmt.Sprintf("s%d", i),
					Incarnation: "x", TTL: 300 * time.Millisecond, Preferred: j % 4})
				if err == nil {
					seen(i, l)
					if l2, err := s.Renew(octx, l); err == nil {
						seen(i, l2)
						l = l2
					}
					if j%8 == 0 {
						_ = s.Release(octx, l, -1)
					}
				}
				cancel()
			}
		})
	}
	faults := injectFaults(t, srv, schema, proxies, 15*time.Second)
	stop()
	wg.Wait()

	total := 0
	for key, rs := range ranges {
		slices.SortFunc(rs, func(a, b rng) int { return int(a.start - b.start) })
		for i := 1; i < len(rs); i++ {
			if rs[i].start < rs[i-1].end {
				t.Errorf("key %s: ranges overlap: %v and %v", key, rs[i-1], rs[i])
			}
		}
		total += len(rs)
	}
	nterms := 0
	for slot, ts := range terms {
		fences := slices.Sorted(func(yield func(int64) bool) {
			for f := range ts {
				if !yield(f) {
					return
				}
			}
		})
		nterms += len(fences)
		for i := 1; i < len(fences); i++ {
			prev, cur := ts[fences[i-1]], ts[fences[i]]
			if cur.floor < prev.ceiling {
				t.Errorf("slot %d: fence %d (store %d) floor %d below fence %d's (store %d) ceiling %d",
					slot, fences[i], cur.who, cur.floor, fences[i-1], prev.who, prev.ceiling)
			}
		}
	}
	var errs []string
	failures.Range(func(k, _ any) bool { errs = append(errs, k.(string)); return len(errs) < 5 })
	t.Logf("faults: %v; %d ranges and %d lease terms collected; some failures seen: %q", faults, total, nterms, errs)
	if total < 200 || nterms < 10 {
		t.Errorf("too little work done under faults to prove anything: %d ranges, %d terms", total, nterms)
	}
}

// injectFaults runs for d: every second or so it kills and restarts the
// server, cuts one store's connections, or terminates every client
// backend; it returns what it did.
func injectFaults(t *testing.T, srv *pgtest.Server, schema string, proxies []*pgtest.Proxy, d time.Duration) []string {
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var did []string
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		time.Sleep(time.Duration(500+rnd.IntN(700)) * time.Millisecond)
		switch rnd.IntN(3) {
		case 0:
			srv.Kill()
			srv.Restart(t)
			did = append(did, "server killed+restarted")
		case 1:
			p := proxies[rnd.IntN(len(proxies))]
			p.Cut()
			time.Sleep(100 * time.Millisecond)
			p.Restore()
			did = append(did, "connections cut")
		case 2:
			c, err := pgx.Connect(t.Context(), srv.ConnString())
			if err != nil {
				t.Fatalf("connect to terminate backends: %v", err)
			}
			var k int
			err = c.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&k)
			c.Close(context.Background())
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Fatalf("pg_terminate_backend: %v", err)
			}
			did = append(did, fmt.Sprintf("%d backends terminated", k))
		}
	}
	return did
}
