package rangebench

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/cosid-go/store"
)

// Sides are what Paired compares a store's Next with. Each should run on
// connections of its own: a side that shares a pool with another runs
// after it on a connection it just warmed, and wins by that alone.
type Sides struct {
	// Raw is the database's fastest single statement that returns the new
	// value (goal: Next at 0.9x its throughput or better).
	Raw func(context.Context)
	// RawTimeout is Raw's statement on connections of its own, which
	// Paired runs under a per-call timeout, as the store bounds each call:
	// what the timeout itself costs a plain client.
	RawTimeout func(context.Context)
	// Leaf is Meituan Leaf's segment pattern, a transaction with an
	// UPDATE then a SELECT (goal: 1.5x).
	Leaf func(context.Context)
}

// Paired compares, on one server in the same run, st's Next (step 1, one
// key, through the user API) with the sides. Each iteration runs each of
// them once, in an order of its own: the iterations go through every
// order of the calls in turn, so that each comes first, and after each
// other, equally often (on a loaded machine the first call after another
// side's is slower, and a fixed order gave that to one side). The
// sides fail b themselves; a nil side is left out.
//
// Metrics: vs-raw-median-x is the median of each iteration's raw/Next
// time ratio (a throughput ratio: above 1, Next is faster), which a few
// stalls of one side on a loaded machine swing much less than
// vs-raw-x, the ratio of the sums; vs-raw-timeout-x and vs-leaf-x are
// sums' ratios; next-, raw- and leaf-med-ns are each call's median time.
func Paired(b *testing.B, st *store.Store, s Sides) {
	ctx := context.Background()
	r := st.Ranges()
	type side struct {
		name string
		f    func()
		took []time.Duration
	}
	sides := []*side{{name: "next", f: func() {
		if _, err := r.Next(ctx, "bench", 1); err != nil {
			b.Fatal(err)
		}
	}}}
	add := func(name string, f func()) { sides = append(sides, &side{name: name, f: f}) }
	if s.Raw != nil {
		add("raw", func() { s.Raw(ctx) })
	}
	if s.RawTimeout != nil {
		add("raw-timeout", func() {
			tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			s.RawTimeout(tctx)
		})
	}
	if s.Leaf != nil {
		add("leaf", func() { s.Leaf(ctx) })
	}
	for _, x := range sides {
		x.f() // each side's first call: connections, the key's row
		x.took = make([]time.Duration, 0, b.N)
	}
	orders := permutations(len(sides))
	b.ResetTimer()
	for n := range b.N {
		for _, i := range orders[n%len(orders)] {
			t0 := time.Now()
			sides[i].f()
			sides[i].took = append(sides[i].took, time.Since(t0))
		}
	}
	b.StopTimer()

	next, sum := sides[0], func(ts []time.Duration) (s time.Duration) {
		for _, t := range ts {
			s += t
		}
		return s
	}
	for _, x := range sides {
		total := sum(x.took)
		b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), x.name+"-ns/op")
		if x == next {
			continue
		}
		b.ReportMetric(float64(total)/float64(sum(next.took)), "vs-"+x.name+"-x")
		if x.name == "raw" {
			ratios := make([]float64, b.N)
			for n := range ratios {
				ratios[n] = float64(x.took[n]) / float64(next.took[n])
			}
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "vs-raw-median-x")
		}
	}
	for _, x := range sides {
		slices.Sort(x.took)
		b.ReportMetric(float64(x.took[len(x.took)/2].Nanoseconds()), x.name+"-med-ns")
	}
}

// permutations lists every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for at := range n {
			q := slices.Insert(slices.Clone(p), at, n-1)
			out = append(out, q)
		}
	}
	return out
}
