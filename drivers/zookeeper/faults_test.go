package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestEnsembleFaults is the never-twice proof under faults: 8 stores, each
// reaching every member of a 3-server ensemble through proxies of its own,
// allocate from two keys at once while members (the leader included) are
// killed and restarted, connections are cut, and sessions expire. Every
// range handed out is collected; none may overlap another.
func TestEnsembleFaults(t *testing.T) { onEachEnsemble(t, 15*time.Second, testEnsembleFaults) }

// onEachEnsemble runs a fault test that starts a 3-server ensemble and
// runs for about d, once per supported version; not with -short.
func onEachEnsemble(t *testing.T, d time.Duration, run func(t *testing.T, version string, d time.Duration)) {
	t.Helper()
	if testing.Short() {
		t.Skipf("starts a 3-server ensemble and runs for about %v per version", d)
	}
	for _, version := range zktest.Versions() {
		t.Run(version, func(t *testing.T) { run(t, version, d) })
	}
}

// syncRead makes s's server catch up with the leader on path, so that a
// plain read that follows (a slot listing) sees every write acknowledged
// before: a follower may not have applied the latest writes yet. Retried
// while the connection recovers from the faults (30s at most).
func syncRead(t *testing.T, s *driverStore, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := s.conn.Sync(path)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sync of %s: %v", path, err)
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
}

type allocation struct {
	start, end int64
	store      int
}

// openBehindProxies opens n stores on root, each reaching every member of
// ens through proxies of its own (returned as [store][member]), so a test
// can cut one store off one member. The short timeouts make faults show
// within a test's run.
func openBehindProxies(t *testing.T, ens *zktest.Ensemble, n int, root string) ([]*driverStore, zktest.Stores) {
	proxies := make(zktest.Stores, n)
	sts := make([]*driverStore, n)
	for i := range n {
		var addrs []string
		for _, m := range ens.Members {
			p := zktest.NewProxy(t, m.Addr())
			proxies[i] = append(proxies[i], p)
			addrs = append(addrs, p.Addr())
		}
		sts[i] = openTest(t, testOptions(strings.Join(addrs, ","), map[string]string{
			"root":                root,
			"sessionTimeout":      "2s",
			"connectionTimeout":   "1s",
			"retry.baseSleepTime": "20ms",
			"retry.maxSleep":      "200ms",
			"retry.maxRetries":    "10",
		}), nil)
	}
	return sts, proxies
}

func testEnsembleFaults(t *testing.T, version string, duration time.Duration) {
	ens := zktest.StartEnsemble(t, version, 3)
	const stores, workers = 8, 2
	keys := []string{"faults", "faults/nested"}
	root := randomRoot()

	sts, proxies := openBehindProxies(t, ens, stores, root)

	var (
		mu       sync.Mutex
		got      = map[string][]allocation{}
		ok, fail atomic.Int64
		failures sync.Map // error text (shortened) -> count, for the log
	)
	run, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for i, s := range sts {
		for w := range workers {
			wg.Go(func() {
				rnd := rand.New(rand.NewPCG(uint64(i), uint64(w)))
				for run.Err() == nil {
					key := keys[rnd.IntN(len(keys))]
					step := 1 + rnd.Int64N(50)
					ctx, cancel := context.WithTimeout(run, 3*time.Second)
					start, err := s.Next(ctx, key, step)
					cancel()
					if err != nil {
						fail.Add(1)
						if errors.Is(err, driver.ErrRecreated) || errors.Is(err, driver.ErrCorrupt) ||
							errors.Is(err, driver.ErrSealed) || errors.Is(err, driver.ErrExhausted) {
							t.Errorf("store %d: Next(%q, %d): %v", i, key, step, err)
						}
						countFailure(&failures, strings.ReplaceAll(err.Error(), root, "{root}"))
						continue
					}
					ok.Add(1)
					mu.Lock()
					got[key] = append(got[key], allocation{start, start + step, i})
					mu.Unlock()
				}
			})
		}
	}

	// Faults, one at a time, each held long enough for requests to meet it.
	log := zktest.EnsembleFaults(t, ens, proxies, rand.New(rand.NewPCG(7, 11))).Run(t, duration)
	stop()
	wg.Wait()
	t.Logf("faults: %s", strings.Join(log, "; "))

	// Every store works again once the faults are over.
	ens.WaitQuorum(t)
	for i, s := range sts {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		start, err := s.Next(ctx, keys[0], 1)
		cancel()
		if err != nil {
			t.Errorf("store %d after the faults: %v", i, err)
			continue
		}
		got[keys[0]] = append(got[keys[0]], allocation{start, start + 1, i})
		ok.Add(1)
	}

	checker := sts[0]
	for _, key := range keys {
		rs := got[key]
		slices.SortFunc(rs, func(a, b allocation) int { return cmpInt64(a.start, b.start) })
		var end, gaps int64
		overlaps := 0
		for j, r := range rs {
			if j > 0 && r.start < end {
				if overlaps++; overlaps > 10 {
					continue
				}
				prev := rs[j-1]
				t.Errorf("%q: [%d, %d) from store %d overlaps [%d, %d) from store %d: a value was handed out twice",
					key, r.start, r.end, r.store, prev.start, prev.end, prev.store)
			}
			if r.start > end {
				gaps += r.start - end
			}
			end = max(end, r.end)
		}
		if overlaps > 10 {
			t.Errorf("%q: %d overlaps in all", key, overlaps)
		}
		next, _, err := checker.Current(t.Context(), key) // syncs first: never a follower's stale view
		if err != nil {
			t.Errorf("Current(%q): %v", key, err)
		} else if next < end {
			t.Errorf("Current(%q) = %d, below the end %d of a range handed out", key, next, end)
		}
		t.Logf("%q: %d ranges, values [0, %d), %d values skipped after unknown outcomes", key, len(rs), end, gaps)
	}
	var summary []string
	failures.Range(func(k, v any) bool {
		summary = append(summary, fmt.Sprintf("%dx %s", v.(*atomic.Int64).Load(), k))
		return true
	})
	slices.Sort(summary)
	t.Logf("%d Next calls succeeded, %d failed during faults:\n\t%s", ok.Load(), fail.Load(), strings.Join(summary, "\n\t"))
	if ok.Load() < 100 {
		t.Errorf("only %d Next calls succeeded: the test proved little", ok.Load())
	}
}

// countFailure tallies an error message, shortened.
func countFailure(m *sync.Map, msg string) {
	if len(msg) > 120 {
		msg = msg[:120]
	}
	v, _ := m.LoadOrStore(msg, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
