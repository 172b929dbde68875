// Package rangecheck is for tests: it collects the ranges that calls of
// Next were handed, from any number of stores, and fails the test when a
// range is not the step its caller asked for or a value was handed out
// twice; Callers makes such calls from many goroutines at once.
package rangecheck

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store"
)

// Handed is the ranges handed out so far; its zero value is empty and
// ready. It is safe for concurrent use.
type Handed struct {
	mu  sync.Mutex
	got []handed
}

type handed struct {
	r     store.Range
	store int
}

// Add records r, handed out by store number from.
func (h *Handed) Add(from int, r store.Range) {
	h.mu.Lock()
	h.got = append(h.got, handed{r, from})
	h.mu.Unlock()
}

// Step records r, handed out by store number from to a call that asked for
// step values, and fails t (not fatally) when r is not step long.
func (h *Handed) Step(t testing.TB, from int, r store.Range, step int64) {
	t.Helper()
	if r.Len() != step {
		t.Errorf("store %d: range %v for a step of %d", from, r, step)
	}
	h.Add(from, r)
}

// Len is the number of ranges recorded.
func (h *Handed) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.got)
}

// Check fails t fatally when two recorded ranges overlap, and returns the
// ranges sorted by their start.
func (h *Handed) Check(t testing.TB) []store.Range {
	t.Helper()
	h.mu.Lock()
	got := slices.Clone(h.got)
	h.mu.Unlock()
	slices.SortFunc(got, func(x, y handed) int { return cmp.Compare(x.r.Start, y.r.Start) })
	rs := make([]store.Range, len(got))
	for i, a := range got {
		if i > 0 && a.r.Start < got[i-1].r.End {
			b := got[i-1]
			t.Fatalf("%v (store %d) overlaps %v (store %d): a value was handed out twice", a.r, a.store, b.r, b.store)
		}
		rs[i] = a.r
	}
	return rs
}

// Callers are goroutines calling Next on one key of each store at once,
// as many callers of one process would: the workload of the coalescing
// tests. Each call asks for a random step and one in eight is cancelled
// after a random delay (while it waits, while its write is in flight, or
// after it returned).
type Callers struct {
	Stores   []*store.Store
	PerStore int   // goroutines per store
	Calls    int   // calls each goroutine makes at least
	MaxStep  int64 // steps are 1..MaxStep
	// CancelWithin bounds the delay of a cancellation.
	CancelWithin time.Duration
	// Seed sets the goroutines' random choices (goroutine g of store i
	// seeds with i and Seed+g), so a run can be repeated.
	Seed uint64
	// More, if set, keeps every goroutine calling past Calls while it
	// holds, for up to a minute: until the faults the test injects were
	// met (a fast run may end before the first), given the counts so far.
	More func(*Counts) bool
	// Expected reports a failure the test causes (a lost answer, a cut
	// connection); it is counted. Any other error but a cancellation fails
	// the test. Nil: none is expected.
	Expected func(error) bool
}

// Counts are the outcomes of the calls.
type Counts struct{ OK, Cancelled, Failed atomic.Int64 }

// Run makes the calls on key, records every range handed out in h
// (checking its step), and returns once every goroutine is done.
func (c Callers) Run(t testing.TB, key string, h *Handed) *Counts {
	t.Helper()
	var n Counts
	until := time.Now().Add(time.Minute)
	more := func() bool { return c.More != nil && c.More(&n) && time.Now().Before(until) }
	var wg sync.WaitGroup
	for i, st := range c.Stores {
		for g := range c.PerStore {
			wg.Go(func() {
				rnd := rand.New(rand.NewPCG(uint64(i), c.Seed+uint64(g)))
				for k := 0; k < c.Calls || more(); k++ {
					step := 1 + rnd.Int64N(c.MaxStep)
					ctx, cancel := context.WithCancel(t.Context())
					if rnd.IntN(8) == 0 {
						time.AfterFunc(time.Duration(rnd.Int64N(int64(c.CancelWithin))), cancel)
					}
					r, err := st.Ranges().Next(ctx, key, step)
					cancel()
					switch {
					case err == nil:
						n.OK.Add(1)
						h.Step(t, i, r, step)
					case errors.Is(err, context.Canceled):
						n.Cancelled.Add(1)
					case c.Expected != nil && c.Expected(err):
						n.Failed.Add(1)
					default:
						t.Errorf("store %d: Next: %v", i, err)
					}
				}
			})
		}
	}
	wg.Wait()
	return &n
}
