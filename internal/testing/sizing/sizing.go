// Package sizing measures what one driver gives on the machine it runs on,
// for docs/sizing.md: Next's latency at step 1, the calls/s of 64 callers
// on one key and on 64 keys, the IDs/s of a Segment and of a Snowflake
// with 8 callers each, and a fleet restart (package fleetbench). Each
// measurement prints one markdown row, with the load average next to it,
// since figures of a loaded machine mean little without it.
//
//	make sizing
//
// runs it on every driver the machine can start (scripts/sizing.sh).
package sizing

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/idgen"
	"github.com/cosid-go/store/internal/testing/fleetbench"
)

// Prefix starts every line of the table, so that scripts/sizing.sh can
// pick the table out of go test's output.
const Prefix = "SIZING: "

// Callers of the throughput measurements.
const (
	NextCallers      = 64
	GeneratorCallers = 8
)

// Driver is one row: how to open a store (a connection of its own) on the
// storage every store of the row shares.
type Driver struct {
	Name    string            // as shown: "PostgreSQL 15"
	Driver  string            // as registered: "postgres"
	Options map[string]string // the storage's options
	// FleetOptions, if set, replace Options for the fleet's stores (a
	// pool of one connection, so that N instances fit the server).
	FleetOptions map[string]string
}

// Duration is how long each throughput measurement runs
// (COSID_SIZING_TIME, default 2s).
func Duration(tb testing.TB) time.Duration {
	return envDuration(tb, "COSID_SIZING_TIME", 2*time.Second)
}

// Fleet is the fleet restart's number of instances (COSID_SIZING_FLEET,
// default 250).
func Fleet(tb testing.TB) int {
	n, err := strconv.Atoi(cmp.Or(os.Getenv("COSID_SIZING_FLEET"), "250"))
	if err != nil || n < 1 || n > fleetbench.Limit {
		tb.Fatalf("COSID_SIZING_FLEET=%q: want a number of instances between 1 and %d", os.Getenv("COSID_SIZING_FLEET"), fleetbench.Limit)
	}
	return n
}

func envDuration(tb testing.TB, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		tb.Fatalf("%s=%q: want a positive duration such as 2s", name, v)
	}
	return d
}

// Header prints the table's title lines: date, machine and load.
func Header(tb testing.TB) {
	fmt.Printf("%sMeasured %s on %s/%s, %d CPUs, load average %s at the start; each throughput over %v, fleet of %d.\n",
		Prefix, time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
		LoadAverage(), Duration(tb), Fleet(tb))
	fmt.Printf("%s\n", Prefix)
	fmt.Printf("%s| driver | Next p50 | Next p99 | 64 callers, 1 key (calls/s) | 64 callers, 64 keys (calls/s) | Segment, 8 callers (IDs/s) | Snowflake, 8 callers (IDs/s) | fleet restart: all held | load average after |\n", Prefix)
	fmt.Printf("%s| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n", Prefix)
}

// LoadAverage is the 1, 5 and 15 minute load averages of /proc/loadavg,
// or "unknown".
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// Row measures d and prints its row; a failed call fails tb.
func Row(tb testing.TB, d Driver) {
	ctx := context.Background()
	st := open(tb, d, d.Options)
	p50, p99 := latency(tb, st)
	oneKey := calls(tb, st, 1)
	spread := calls(tb, st, NextCallers)
	seg := segment(tb, ctx, st)
	sf := snowflake(tb, ctx, st)
	fleet := restart(tb, d)
	fmt.Printf("%s| %s | %s | %s | %s | %s | %s | %s | %d: %s | %s |\n", Prefix, d.Name,
		ms(p50), ms(p99), rate(oneKey), rate(spread), rate(seg), rate(sf),
		Fleet(tb), ms(fleet), LoadAverage())
}

var runs atomic.Int64

// name is unique per measurement and run, so that runs on one storage keep
// apart.
func name(what string) string {
	return fmt.Sprintf("sizing-%s-%d-%d", what, time.Now().UnixNano(), runs.Add(1))
}

func open(tb testing.TB, d Driver, options map[string]string) *store.Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fleetbench.Deadline)
	defer cancel()
	st, err := store.OpenContext(ctx, d.Driver, options, store.WithTimeout(fleetbench.Deadline))
	if err != nil {
		tb.Fatalf("%s: open: %v", d.Name, err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// latency makes sequential Next calls of step 1 for a second or 2,000
// calls, whichever ends first, and returns the median and the 99th
// percentile.
func latency(tb testing.TB, st *store.Store) (p50, p99 time.Duration) {
	ctx := context.Background()
	key := name("latency")
	var took []time.Duration
	for end := time.Now().Add(time.Second); len(took) < 2000 && (len(took) < 100 || time.Now().Before(end)); {
		t0 := time.Now()
		if _, err := st.Ranges().Next(ctx, key, 1); err != nil {
			tb.Fatalf("Next: %v", err)
		}
		took = append(took, time.Since(t0))
	}
	slices.Sort(took)
	return took[len(took)/2], took[len(took)*99/100]
}

// calls runs NextCallers goroutines calling Next (step 1) on keys keys of
// st for Duration and returns the calls per second.
func calls(tb testing.TB, st *store.Store, keys int) float64 {
	prefix := name("calls")
	return parallel(tb, NextCallers, func(i int) error {
		_, err := st.Ranges().Next(context.Background(), prefix+"-"+strconv.Itoa(i%keys), 1)
		return err
	})
}

// segment: GeneratorCallers goroutines on one Segment of default options.
func segment(tb testing.TB, ctx context.Context, st *store.Store) float64 {
	seg, err := idgen.NewSegment(ctx, st, name("segment"), idgen.SegmentOptions{})
	if err != nil {
		tb.Fatalf("NewSegment: %v", err)
	}
	defer seg.Close(ctx)
	return parallel(tb, GeneratorCallers, func(int) error {
		_, err := seg.NextID(ctx)
		return err
	})
}

// snowflake: GeneratorCallers goroutines on one Snowflake of default
// options (1 ms unit, 12 sequence bits: at most 4,096,000 IDs/s).
func snowflake(tb testing.TB, ctx context.Context, st *store.Store) float64 {
	ns := store.Namespace{Name: name("snowflake"), Limit: 1024, Tolerance: time.Second}
	sf, err := idgen.NewSnowflake(ctx, st, ns, "sizing", idgen.SnowflakeOptions{})
	if err != nil {
		tb.Fatalf("NewSnowflake: %v", err)
	}
	defer sf.Close(ctx)
	return parallel(tb, GeneratorCallers, func(int) error {
		_, err := sf.NextID(ctx)
		return err
	})
}

// parallel runs n goroutines, each calling call in a loop, for Duration,
// and returns the calls per second; the first error fails tb.
func parallel(tb testing.TB, n int, call func(i int) error) float64 {
	tb.Helper()
	var total atomic.Int64
	var firstErr error
	var once sync.Once
	var stop atomic.Bool
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range n {
		wg.Go(func() {
			for !stop.Load() {
				if err := call(i); err != nil {
					once.Do(func() { firstErr = err })
					stop.Store(true)
					return
				}
				total.Add(1)
			}
		})
	}
	timer := time.AfterFunc(Duration(tb), func() { stop.Store(true) })
	wg.Wait()
	timer.Stop()
	elapsed := time.Since(t0)
	if firstErr != nil {
		tb.Fatalf("a caller failed: %v", firstErr)
	}
	return float64(total.Load()) / elapsed.Seconds()
}

// restart opens Fleet stores, each with a connection of its own, and
// returns the time until every one held a slot of one namespace
// (fleetbench.Restart, which fails tb if a slot is held twice).
func restart(tb testing.TB, d Driver) time.Duration {
	options := d.Options
	if d.FleetOptions != nil {
		options = d.FleetOptions
	}
	sts := make([]*store.Store, Fleet(tb))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := range sts {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), fleetbench.Deadline)
			defer cancel()
			st, err := store.OpenContext(ctx, d.Driver, options, store.WithTimeout(fleetbench.Deadline))
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			sts[i] = st
		})
	}
	wg.Wait()
	defer func() {
		for _, st := range sts {
			if st != nil {
				st.Close()
			}
		}
	}()
	if firstErr != nil {
		tb.Fatalf("%s: open a fleet instance: %v", d.Name, firstErr)
	}
	took := fleetbench.Restart(tb, sts)
	return took[len(took)-1]
}

// ms shows d in milliseconds, microseconds below one, seconds above one
// thousand.
func ms(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return "< 1 µs"
	case d < time.Millisecond:
		return strconv.FormatInt(d.Microseconds(), 10) + " µs"
	case d >= time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + " s"
	}
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + " ms"
}

// rate rounds to three significant digits and groups thousands.
func rate(r float64) string {
	n := int64(r + 0.5)
	f := int64(1)
	for m := n; m >= 1000; m /= 10 {
		f *= 10
	}
	n = (n + f/2) / f * f
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Selected is the set of rows COSID_SIZING_DRIVERS names (a comma list),
// or nil for every row.
func Selected(tb testing.TB) map[string]bool {
	v := os.Getenv("COSID_SIZING_DRIVERS")
	if v == "" {
		return nil
	}
	set := map[string]bool{}
	for f := range strings.SplitSeq(v, ",") {
		set[strings.TrimSpace(f)] = true
	}
	return set
}
