// Package lockscale measures many lock holders, run by the benchmarks of
// every driver with locks: S stores, each with a connection of its own,
// hold N lock names each (names of their own), and churn: each store in
// turn unlocks one of its names and locks it again, all stores at once.
// It reports the Unlock+Lock cycles per second and, from a count the
// driver's test keeps, the messages (watch events, notifications, wake-ups)
// each Unlock caused on the other stores, which must not grow with S.
//
//	COSID_LOCKHOLDERS=200x50 go test -run '^$' -bench ManyLockHolders -benchtime 1x ./drivers/postgres/
//
// COSID_LOCKHOLDERS is SxN (default 200x50); COSID_LOCKCHURN the time the
// stores churn (default 10s).
package lockscale

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// Size parses COSID_LOCKHOLDERS: stores and names per store.
func Size(tb testing.TB) (stores, names int) {
	tb.Helper()
	spec := os.Getenv("COSID_LOCKHOLDERS")
	if spec == "" {
		spec = "200x50"
	}
	s, n, ok := strings.Cut(spec, "x")
	stores, err1 := strconv.Atoi(s)
	names, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || stores < 2 || names < 1 {
		tb.Fatalf("COSID_LOCKHOLDERS=%q: want SxN, S >= 2 stores and N >= 1 names each (200x50)", spec)
	}
	return stores, names
}

// Churn parses COSID_LOCKCHURN (default 10s).
func Churn(tb testing.TB) time.Duration {
	tb.Helper()
	spec := os.Getenv("COSID_LOCKCHURN")
	if spec == "" {
		return 10 * time.Second
	}
	d, err := time.ParseDuration(spec)
	if err != nil || d <= 0 {
		tb.Fatalf("COSID_LOCKCHURN=%q: want a duration (10s)", spec)
	}
	return d
}

// Result is one run's figures.
type Result struct {
	Stores, Names int
	Cycles        int64         // Unlock+Lock pairs done while churning
	Elapsed       time.Duration // of the churn
	Heard         int64         // the driver's count of messages to other stores, during the churn
}

// PerUnlock is Heard per Unlock.
func (r Result) PerUnlock() float64 {
	if r.Cycles == 0 {
		return 0
	}
	return float64(r.Heard) / float64(r.Cycles)
}

func (r Result) String() string {
	return fmt.Sprintf("%d stores x %d names: %d Unlock+Lock in %v (%.0f/s), %.2f messages to other stores per Unlock",
		r.Stores, r.Names, r.Cycles, r.Elapsed.Round(time.Millisecond), float64(r.Cycles)/r.Elapsed.Seconds(), r.PerUnlock())
}

// Run opens stores with open (each closed by the test's end), takes
// names locks in each, then churns for d. heard returns the driver's
// running count of messages that stores received about other stores'
// locks (nil: not counted). Any Lock or Unlock error fails the run.
func Run(tb testing.TB, open func() *store.Store, stores, names int, d time.Duration, heard func() int64) Result {
	tb.Helper()
	ctx := context.Background()
	sts := make([]*store.Store, stores)
	held := make([][]*store.Lock, stores)
	var wg sync.WaitGroup
	var failed atomic.Value
	fail := func(err error) { failed.CompareAndSwap(nil, err) }
	for i := range sts {
		sts[i] = open()
	}
	for i, st := range sts {
		wg.Go(func() {
			held[i] = make([]*store.Lock, names)
			for j := range names {
				l, err := st.Locks().Lock(ctx, lockName(i, j))
				if err != nil {
					fail(fmt.Errorf("store %d: Lock(%s): %w", i, lockName(i, j), err))
					return
				}
				held[i][j] = l
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		tb.Fatal(err)
	}
	count := func() int64 {
		if heard == nil {
			return 0
		}
		return heard()
	}
	before := count()
	var cycles atomic.Int64
	start := time.Now()
	stop := start.Add(d)
	for i, st := range sts {
		wg.Go(func() {
			for j := 0; time.Now().Before(stop); j = (j + 1) % names {
				if err := held[i][j].Unlock(ctx); err != nil {
					fail(fmt.Errorf("store %d: Unlock(%s): %w", i, lockName(i, j), err))
					return
				}
				l, err := st.Locks().Lock(ctx, lockName(i, j))
				if err != nil {
					held[i][j] = nil
					fail(fmt.Errorf("store %d: Lock(%s): %w", i, lockName(i, j), err))
					return
				}
				held[i][j] = l
				cycles.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	after := count()
	for i := range held {
		for _, l := range held[i] {
			if l != nil {
				l.Unlock(ctx)
			}
		}
	}
	if err, _ := failed.Load().(error); err != nil {
		tb.Fatal(err)
	}
	return Result{Stores: stores, Names: names, Cycles: cycles.Load(), Elapsed: elapsed, Heard: after - before}
}

func lockName(store, name int) string { return fmt.Sprintf("s%d-n%d", store, name) }

// Heard sums, over the stores of a run, the count each driver store D
// keeps of the messages it received about other stores' locks: Open wraps
// Run's open, Sum is Run's heard.
type Heard[D driver.Store] struct {
	Of func(D) int64 // one driver store's running count

	mu      sync.Mutex
	drivers []D
}

// Open is open, the driver store of each store it opens kept to be
// counted.
func (h *Heard[D]) Open(open func() *store.Store) func() *store.Store {
	return func() *store.Store {
		st := open()
		h.mu.Lock()
		defer h.mu.Unlock()
		h.drivers = append(h.drivers, rawdriver.Of(st).(D))
		return st
	}
}

// Sum is the count of every store opened so far.
func (h *Heard[D]) Sum() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var n int64
	for _, d := range h.drivers {
		n += h.Of(d)
	}
	return n
}

// Quiet runs 8 stores holding 2 names each, churning for a second, and
// fails the test unless Unlocks ran and none told another store: a
// driver's test that an Unlock's messages do not grow with the stores.
// what names the messages heard counts, in the failure.
func Quiet(t testing.TB, open func() *store.Store, heard func() int64, what string) {
	t.Helper()
	r := Run(t, open, 8, 2, time.Second, heard)
	t.Log(r)
	if r.Cycles == 0 {
		t.Fatal("no Unlock+Lock in the churn")
	}
	if r.Heard != 0 {
		t.Errorf("%d stores holding names of their own: %d %s in %d Unlocks, want none", r.Stores, r.Heard, what, r.Cycles)
	}
}

// Report runs Run and reports its figures as the benchmark's metrics.
func Report(b *testing.B, open func() *store.Store, heard func() int64) {
	stores, names := Size(b)
	r := Run(b, open, stores, names, Churn(b), heard)
	b.ReportMetric(float64(r.Cycles)/r.Elapsed.Seconds(), "cycles/s")
	b.ReportMetric(r.PerUnlock(), "msgs/unlock")
	b.Log(r)
}
