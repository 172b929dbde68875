// Package fleetbench measures a fleet restart, run by every driver's
// benchmarks: N instances, each with a store and a connection of its own,
// all calling Slots().Acquire in one namespace at the same moment, as a
// deployment restart does. It reports the time until every instance holds
// a slot, and fails if any acquire fails or if any slot is held twice.
//
//	COSID_FLEET=250,1000 go test -run '^$' -bench Fleet -benchtime 1x ./drivers/zookeeper/
//
// COSID_FLEET lists the fleet sizes (default 250,1000); each size is a
// sub-benchmark n=N whose metric s/all-held is the time from the start
// signal until the last instance held its slot. Beside it, what the
// restart cost in CPU, per acquire: the whole machine's (cpu-ms/acquire:
// the servers and the instances, all on this machine) and this process's
// (client-cpu-ms/acquire: the instances). On a quiet machine whose cores
// the restart keeps busy, the time grows as the CPU per acquire times the
// fleet: a CPU per acquire that stays flat as the fleet grows is a restart
// whose cost is linear in the fleet.
package fleetbench

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// Limit is the namespace's number of slots: twice the largest default
// fleet, as the issue measured.
const Limit = 2048

// Deadline bounds one fleet's acquires: an instance not holding a slot by
// then fails the run.
const Deadline = 60 * time.Second

// Sizes parses COSID_FLEET, the fleet sizes (default 250,1000).
func Sizes(tb testing.TB) []int {
	sizes := cmp.Or(os.Getenv("COSID_FLEET"), "250,1000")
	var out []int
	for f := range strings.SplitSeq(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > Limit {
			tb.Fatalf("COSID_FLEET=%q: %q is not a fleet size between 1 and %d", sizes, f, Limit)
		}
		out = append(out, n)
	}
	return out
}

var runs atomic.Int64

// Run runs one sub-benchmark per fleet size. open returns a new driver
// store on a connection of its own; all of them must share one storage.
// open is called from many goroutines at once.
// Stores are opened (and connected) before the clock starts and closed
// when the benchmark ends.
func Run(b *testing.B, open func() (driver.Store, error)) {
	for _, n := range Sizes(b) {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			sts := make([]*store.Store, n)
			var wg sync.WaitGroup
			errs := make([]error, n)
			// The first store alone makes the storage (tables, a root);
			// then a few at a time, as a fleet's instances come up.
			sem := make(chan struct{}, 16)
			for i := range n {
				if i == 1 {
					wg.Wait()
				}
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					d, err := open()
					if err != nil {
						errs[i] = err
						return
					}
					sts[i], errs[i] = connect(d)
				})
			}
			wg.Wait()
			for _, st := range sts {
				if st != nil {
					b.Cleanup(func() { st.Close() })
				}
			}
			for i, err := range errs {
				if err != nil {
					b.Fatalf("open instance %d: %v", i, err)
				}
			}
			var worst, half time.Duration
			var machine, client time.Duration
			b.ResetTimer()
			for range b.N {
				m0, c0 := cpuTimes()
				took := Restart(b, sts)
				m1, c1 := cpuTimes()
				machine, client = machine+m1-m0, client+c1-c0
				if took[len(took)-1] > worst {
					worst, half = took[len(took)-1], took[len(took)/2]
				}
			}
			b.StopTimer()
			b.ReportMetric(worst.Seconds(), "s/all-held")
			b.ReportMetric(half.Seconds(), "s/half-held")
			if machine > 0 {
				per := float64(b.N * n)
				b.ReportMetric(float64(machine.Milliseconds())/per, "cpu-ms/acquire")
				b.ReportMetric(float64(client.Milliseconds())/per, "client-cpu-ms/acquire")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// cpuTimes is the CPU time the machine has spent busy (all cores, all
// processes: /proc/stat) and this process's (/proc/self/stat), in clock
// ticks of 10 ms; zero where the files are not there (not Linux).
func cpuTimes() (machine, self time.Duration) {
	const tick = 10 * time.Millisecond // USER_HZ, 100 on every Linux port
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		// cpu user nice system idle iowait irq softirq steal ...
		for i, f := range strings.Fields(line)[1:] {
			if n, err := strconv.ParseInt(f, 10, 64); err == nil && i != 3 && i != 4 && i < 8 {
				machine += time.Duration(n) * tick
			}
		}
	}
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		// Fields after the command's closing parenthesis: utime and
		// stime are the 12th and 13th.
		_, rest, _ := strings.Cut(string(b), ") ")
		if f := strings.Fields(rest); len(f) > 12 {
			for _, v := range f[11:13] {
				n, _ := strconv.ParseInt(v, 10, 64)
				self += time.Duration(n) * tick
			}
		}
	}
	return machine, self
}

// connect connects d, if it connects, and wraps it in the user API.
func connect(d driver.Store) (*store.Store, error) {
	if c, ok := d.(driver.Connector); ok {
		ctx, cancel := context.WithTimeout(context.Background(), Deadline)
		defer cancel()
		if err := c.Connect(ctx); err != nil {
			d.Close()
			return nil, err
		}
	}
	st, err := store.OpenDriver(d, store.WithTimeout(Deadline))
	if err != nil {
		d.Close()
	}
	return st, err
}

// Restart has every store acquire a slot of a fresh namespace at the same
// moment, each for an owner of its own, and returns the time each one took
// to hold a slot, sorted: the last is the time until all held. It fails tb if an acquire fails or a slot is held twice,
// by the leases returned and by the store's own listing.
func Restart(tb testing.TB, sts []*store.Store) []time.Duration {
	ns := store.Namespace{Name: fmt.Sprintf("fleet%d-%d", runs.Add(1), len(sts)), Limit: Limit}
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	start := make(chan struct{})
	leases := make([]store.Lease, len(sts))
	errs := make([]error, len(sts))
	took := make([]time.Duration, len(sts))
	var ready, done sync.WaitGroup
	var t0 time.Time
	for i, st := range sts {
		ready.Add(1)
		done.Go(func() {
			ready.Done()
			<-start
			leases[i], errs[i] = st.Slots().Acquire(ctx, ns, fmt.Sprintf("instance-%d", i), store.AcquireOptions{TTL: 5 * time.Minute})
			took[i] = time.Since(t0)
		})
	}
	ready.Wait()
	t0 = time.Now()
	close(start)
	done.Wait()
	failed := 0
	for i, err := range errs {
		if err != nil {
			if failed++; failed <= 5 {
				tb.Errorf("instance %d: Acquire: %v", i, err)
			}
		}
	}
	slices.Sort(took)
	if failed > 0 {
		tb.Fatalf("%d of %d instances hold no slot after %v", failed, len(sts), took[len(took)-1])
	}
	Check(tb, sts[0], ns.Name, leases)
	return took
}

// Check fails tb if two leases name the same slot, or if the store's
// listing of ns does not show each lease's term (owner, incarnation and
// fence) on its slot.
func Check(tb testing.TB, st *store.Store, ns string, leases []store.Lease) {
	tb.Helper()
	bySlot := map[int]store.Lease{}
	for _, l := range leases {
		if o, dup := bySlot[l.Slot]; dup {
			tb.Fatalf("slot %d held twice: by %s/%s (fence %d) and by %s/%s (fence %d)",
				l.Slot, o.Owner, o.Incarnation, o.Fence, l.Owner, l.Incarnation, l.Fence)
		}
		bySlot[l.Slot] = l
	}
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	infos, err := st.Slots().List(ctx, ns)
	if err != nil {
		tb.Fatalf("List %s: %v", ns, err)
	}
	listed := 0
	for _, si := range infos {
		l, ok := bySlot[si.Slot]
		if !ok {
			if si.Owner != "" {
				tb.Errorf("slot %d is held by %s/%s (fence %d), which no instance was given", si.Slot, si.Owner, si.Incarnation, si.Fence)
			}
			continue
		}
		listed++
		if si.Owner != l.Owner || si.Incarnation != l.Incarnation || si.Fence != l.Fence {
			tb.Errorf("slot %d lists %s/%s fence %d, but %s/%s was given fence %d", si.Slot,
				si.Owner, si.Incarnation, si.Fence, l.Owner, l.Incarnation, l.Fence)
		}
	}
	if listed != len(bySlot) {
		tb.Errorf("the listing of %s shows %d of the %d slots given", ns, listed, len(bySlot))
	}
}
