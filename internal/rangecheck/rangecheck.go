// Package rangecheck is for tests: it collects the ranges that calls of
// Next were handed, from any number of stores, and fails the test when a
// range is not the step its caller asked for or a value was handed out
// twice.
package rangecheck

import (
	"cmp"
	"slices"
	"sync"
	"testing"

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
