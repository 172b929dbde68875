package postgres

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/pgtest"
	"github.com/cosid-go/store/internal/rangecheck"
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
	var ok, cancelled, failed atomic.Int64
	// Callers go on past their calls until a fault and a cancellation were
	// seen (bounded): a fast run may end before the first fault.
	proofBy := time.Now().Add(60 * time.Second)
	var wg sync.WaitGroup
	for i, st := range sts {
		for g := range goroutines {
			wg.Go(func() {
				rnd := rand.New(rand.NewPCG(uint64(i), uint64(g)+1))
				for n := 0; n < calls || (failed.Load() == 0 || cancelled.Load() == 0) && time.Now().Before(proofBy); n++ {
					step := 1 + rnd.Int64N(20)
					ctx, cancel := context.WithCancel(t.Context())
					if rnd.IntN(8) == 0 {
						time.AfterFunc(time.Duration(rnd.IntN(3000))*time.Microsecond, cancel)
					}
					r, err := st.Ranges().Next(ctx, "k", step)
					cancel()
					switch {
					case err == nil:
						ok.Add(1)
						handed.Step(t, i, r, step)
					case errors.Is(err, context.Canceled):
						cancelled.Add(1)
					case errors.Is(err, store.ErrSealed), errors.Is(err, store.ErrExhausted),
						errors.Is(err, store.ErrCorrupt), errors.Is(err, store.ErrRecreated):
						t.Errorf("store %d: Next: %v", i, err)
					default:
						failed.Add(1) // a cut connection
					}
				}
			})
		}
	}
	wg.Wait()
	close(stop)
	cutter.Wait()

	rs := handed.Check(t)
	t.Logf("%d calls got a range, %d cancelled, %d failed; %d cuts", ok.Load(), cancelled.Load(), failed.Load(), cuts.Load())
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
	if failed.Load() == 0 || cancelled.Load() == 0 {
		t.Errorf("no call failed on a cut connection, or none was cancelled: the test proved less than it claims")
	}
}
