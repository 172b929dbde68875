// Package rangebench is one benchmark of Next under concurrency, run by
// every driver's tests: many goroutines on one key against the same number
// on 64 keys, with the store's coalescing on and off, in one run.
package rangebench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// Keys is the number of keys of the spread variants.
const Keys = 64

// variant is one way of calling: coalescing on or off, one key or Keys.
type variant struct {
	name     string
	coalesce bool
	keys     int
}

var variants = []variant{
	{"on-1key", true, 1}, {"on-64keys", true, Keys},
	{"off-1key", false, 1}, {"off-64keys", false, Keys},
}

// Run benchmarks Next (step 1) for 1 and 4 stores and 1, 8 and 64
// goroutines. open returns a new driver store; all of them must share one
// storage (stores of separate processes on one server). Each sub-benchmark
// makes b.N calls in each of the four variants, interleaved in rounds so
// that the drift of a loaded machine biases none, and reports each
// variant's calls/s and the ratios:
//
//   - 1key/64keys: one key against 64 keys, coalescing on;
//   - on/off-1key, on/off-64keys: coalescing on against off;
//
// each also as the ratio of the median rounds (-p50).
//
// Run it with a small fixed count, e.g. -benchtime 2000x.
func Run(b *testing.B, open func(tb testing.TB) driver.Store) {
	for _, stores := range []int{1, 4} {
		for _, goroutines := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("stores=%d/goroutines=%d", stores, goroutines), func(b *testing.B) {
				run(b, open, stores, goroutines)
			})
		}
	}
}

var runs atomic.Int64

func run(b *testing.B, open func(tb testing.TB) driver.Store, stores, goroutines int) {
	ctx := context.Background()
	// Coalescing on and off go through the same driver stores, so that
	// nothing but the portable layer differs between them (not the
	// connections, nor a server process behind each).
	on, off := make([]*store.Store, stores), make([]*store.Store, stores)
	for i := range stores {
		d := open(b)
		var err error
		if on[i], err = store.OpenDriver(d, store.WithTimeout(30*time.Second)); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { on[i].Close() })
		if off[i], err = store.OpenDriver(unclosed{d.(driver.RangeStore)},
			store.WithCoalescing(false), store.WithTimeout(30*time.Second)); err != nil {
			b.Fatal(err)
		}
	}
	prefix := fmt.Sprintf("bench%d", runs.Add(1)) // keys of their own per run
	keys := map[int][]string{}
	for _, n := range []int{1, Keys} {
		for k := range n {
			key := fmt.Sprintf("%s/%d-%d", prefix, n, k)
			keys[n] = append(keys[n], key)
			// The first Next of a key creates it: not part of the figure.
			for _, st := range on {
				if _, err := st.Ranges().Next(ctx, key, 1); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	calls := make([]func(g, j int), len(variants))
	for v, vr := range variants {
		sts, keys := off, keys[vr.keys]
		if vr.coalesce {
			sts = on
		}
		calls[v] = func(g, j int) {
			if _, err := sts[g%stores].Ranges().Next(ctx, keys[(g+j*goroutines)%len(keys)], 1); err != nil {
				b.Error(err)
			}
		}
	}

	// Short rounds interleave best: one call per variant and round for a
	// single goroutine; otherwise each goroutine makes 16 calls a round, so
	// that starting them is not the figure.
	rounds := b.N
	if goroutines > 1 {
		rounds = max(1, min(50, b.N/(16*goroutines)))
	}
	took := make([]time.Duration, len(variants))
	perRound := make([][]float64, len(variants)) // calls/s of each round
	b.ResetTimer()
	for round := range rounds {
		n := b.N/rounds + boolInt(round < b.N%rounds) // calls per variant this round
		for v := range variants {
			d := timed(goroutines, n, calls[v])
			took[v] += d
			perRound[v] = append(perRound[v], float64(n)/d.Seconds())
		}
	}
	b.StopTimer()
	rate := make([]float64, len(variants))
	p50 := make([]float64, len(variants))
	for v, vr := range variants {
		rate[v] = float64(b.N) / took[v].Seconds()
		b.ReportMetric(rate[v], vr.name+"-calls/s")
		slices.Sort(perRound[v])
		p50[v] = perRound[v][len(perRound[v])/2]
	}
	// The ratios of the means, and of the median rounds: a loaded machine
	// stalls a few calls for milliseconds, which weighs on a mean alone.
	b.ReportMetric(rate[0]/rate[1], "1key/64keys")
	b.ReportMetric(rate[0]/rate[2], "on/off-1key")
	b.ReportMetric(rate[1]/rate[3], "on/off-64keys")
	b.ReportMetric(p50[0]/p50[1], "1key/64keys-p50")
	b.ReportMetric(p50[0]/p50[2], "on/off-1key-p50")
	b.ReportMetric(p50[1]/p50[3], "on/off-64keys-p50")
}

// timed makes n calls spread over goroutines and returns the time taken.
func timed(goroutines, n int, call func(g, j int)) time.Duration {
	start := time.Now()
	if goroutines == 1 {
		for j := range n {
			call(0, j)
		}
		return time.Since(start)
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		share := n/goroutines + boolInt(g < n%goroutines)
		wg.Go(func() {
			for j := range share {
				call(g, j)
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// unclosed is a driver store whose Close is left to another store.Store.
type unclosed struct{ driver.RangeStore }

func (unclosed) Close() error { return nil }
