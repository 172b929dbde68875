package postgres

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/rangecheck"
)

// TestCoalescedNext: goroutines of four stores call Next on one key, their
// calls sharing writes (the store's coalescing), while the stores'
// connections are cut now and then (statements whose answer is lost, the
// whole batch failing with them) and some callers are cancelled. Every range
// has the caller's step and none overlaps another.
func TestCoalescedNext(t *testing.T) {
	srv := pgtest.Shared(t)
	schema := freshSchema("coalesce")
	const stores, goroutines, calls = 4, 16, 40
	proxies := make([]*pgtest.Proxy, stores)
	sts := make([]*store.Store, stores)
	for i := range sts {
		proxies[i] = pgtest.NewProxy(t, srv.Addr())
		d := openAt(t, pgtest.ConnStringAt(proxies[i].Addr()), schema, map[string]string{"connectTimeout": "2s"})
		st, err := store.OpenDriver(d, store.WithTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		sts[i] = st
	}
	if _, err := sts[0].Ranges().Next(t.Context(), "k", 1); err != nil {
		t.Fatal(err)
	}

	// Cut one store's connections every 100-200 ms, and restore them.
	var cuts atomic.Int64
	stop := make(chan struct{})
	var cutter sync.WaitGroup
	cutter.Go(func() {
		rnd := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(100+rnd.IntN(100)) * time.Millisecond):
			}
			p := proxies[rnd.IntN(stores)]
			p.Cut()
			p.Restore()
			cuts.Add(1)
		}
	})

	var handed rangecheck.Handed
	n := rangecheck.Callers{Stores: sts, PerStore: goroutines, Calls: calls, MaxStep: 20,
		CancelWithin: 3 * time.Millisecond, Seed: 1,
		More: func(n *rangecheck.Counts) bool { return n.Failed.Load() == 0 || n.Cancelled.Load() == 0 },
		// A cut connection; never a refusal of the key.
		Expected: func(err error) bool {
			return !errors.Is(err, store.ErrSealed) && !errors.Is(err, store.ErrExhausted) &&
				!errors.Is(err, store.ErrCorrupt) && !errors.Is(err, store.ErrRecreated)
		},
	}.Run(t, "k", &handed)
	close(stop)
	cutter.Wait()

	rs := handed.Check(t)
	t.Logf("%d calls got a range, %d cancelled, %d failed; %d cuts", n.OK.Load(), n.Cancelled.Load(), n.Failed.Load(), cuts.Load())
	// The last cut may still cost a connection attempt on a loaded machine.
	var next int64
	var err error
	for try := 0; try < 5; try++ {
		if next, _, err = sts[0].Ranges().Current(t.Context(), "k"); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if end := rs[len(rs)-1].End; end > next {
		t.Errorf("a range ends at %d, past the key's next value %d", end, next)
	}
	if n.Failed.Load() == 0 || n.Cancelled.Load() == 0 {
		t.Errorf("no call failed on a cut connection, or none was cancelled: the test proved less than it claims")
	}
}
