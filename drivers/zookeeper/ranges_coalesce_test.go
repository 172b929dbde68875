package zookeeper

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/rangecheck"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestCoalescedNext: goroutines of four stores call Next on one key, their
// calls sharing writes (the store's coalescing), while answers of writes
// are lost on the wire and some callers are cancelled. Every range has the
// caller's step and none overlaps another: a write with an unknown outcome
// is never counted as done for any caller of its batch. (Its values may be
// handed out later, by any store, when it turns out not to have happened.)
func TestCoalescedNext(t *testing.T) {
	zktest.EachVersion(t, testCoalescedNext)
}

func testCoalescedNext(t *testing.T, srv *zktest.Server) {
	addr := srv.Addr()
	const stores, goroutines, calls, drops = 4, 16, 40, 3
	root := randomRoot()
	var (
		handed  rangecheck.Handed
		mu      sync.Mutex
		skipped []allocation // writes reported with an unknown outcome
	)
	wires := make([]*wire, stores)
	sts := make([]*store.Store, stores)
	var dropped atomic.Int64
	for i := range sts {
		wires[i] = &wire{}
		rnd := rand.New(rand.NewPCG(uint64(i), 7))
		var rmu sync.Mutex
		// A few answers of compare-and-sets are lost: each costs the store
		// its connection, and go-zookeeper connects again.
		wires[i].setBefore(func(op int32) bool {
			rmu.Lock()
			defer rmu.Unlock()
			if op != opSetData || rnd.IntN(20) != 0 || dropped.Load() >= drops*stores {
				return false
			}
			dropped.Add(1)
			return true
		})
		d := openTest(t, testOptions(addr, map[string]string{"root": root}), wires[i])
		st, err := store.OpenDriver(d, store.WithTimeout(20*time.Second), store.WithObserver(store.Observer{
			Event: func(e store.Event) {
				if e.Kind == store.UnknownOutcome {
					mu.Lock()
					skipped = append(skipped, allocation{e.Value, e.Value + e.Count, i})
					mu.Unlock()
				}
			},
		}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		sts[i] = st
	}
	if _, err := sts[0].Ranges().Next(t.Context(), "k", 1); err != nil { // creates the node
		t.Fatal(err)
	}
	before := 0
	for _, w := range wires {
		before += w.requests(opSetData) + w.requests(opMulti)
	}

	n := rangecheck.Callers{Stores: sts, PerStore: goroutines, Calls: calls, MaxStep: 20,
		CancelWithin: 3 * time.Millisecond, Seed: 1,
		More: func(n *rangecheck.Counts) bool { return dropped.Load() == 0 || n.Cancelled.Load() == 0 },
	}.Run(t, "k", &handed)

	writes := -before
	for _, w := range wires {
		writes += w.requests(opSetData) + w.requests(opMulti)
	}
	mu.Lock()
	defer mu.Unlock()
	rs := handed.Check(t)
	next, _, err := sts[0].Ranges().Current(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.End > next {
			t.Fatalf("%v handed out past the key's next value %d", r, next)
		}
	}
	t.Logf("%d calls got a range, %d cancelled; %d answers dropped, %d writes with an unknown outcome; %d writes in all",
		n.OK.Load(), n.Cancelled.Load(), dropped.Load(), len(skipped), writes)
	if dropped.Load() == 0 || n.Cancelled.Load() == 0 {
		t.Errorf("no answer dropped or no call cancelled: the test proved less than it claims")
	}
	if int64(writes) >= n.OK.Load() {
		t.Errorf("%d writes for %d ranges: no call shared a write", writes, n.OK.Load())
	}
}
