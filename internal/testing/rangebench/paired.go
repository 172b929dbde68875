package rangebench

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/cosid-go/store"
)

// Paired compares, on one server in the same run, st's Next (step 1, one
// key, through the user API) with raw, the database's fastest single
// statement that returns the new value (goal: 0.9x its throughput or
// better), and with leaf, Meituan Leaf's segment pattern (a transaction
// with an UPDATE then a SELECT; goal: 1.5x); vs-raw-timeout-x compares
// with raw under a per-call timeout, as the store applies to each call,
// which shows what the timeout itself costs. Each iteration runs one of
// each, interleaved, so drift of a loaded machine biases none; the ratios
// are throughputs (raw time / Next time). vs-raw-median-x is the median of
// each iteration's raw/Next ratio: on a loaded machine a few stalls of
// one side swing the sums' ratio (0.36x to 1.2x in three runs of one
// build), the median much less; next-med-ns and raw-med-ns are each
// call's median time. raw and leaf fail b themselves.
func Paired(b *testing.B, st *store.Store, raw, leaf func(context.Context)) {
	ctx := context.Background()
	r := st.Ranges()
	next := func() {
		if _, err := r.Next(ctx, "bench", 1); err != nil {
			b.Fatal(err)
		}
	}
	rawTimeout := func() {
		tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		raw(tctx)
		cancel()
	}
	next()
	raw(ctx)
	leaf(ctx)
	var inNext, inRaw, inRawTimeout, inLeaf time.Duration
	ratios := make([]float64, 0, b.N)
	nexts, raws := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		next()
		t1 := time.Now()
		raw(ctx)
		t2 := time.Now()
		leaf(ctx)
		t3 := time.Now()
		rawTimeout()
		ratios = append(ratios, float64(t2.Sub(t1))/float64(t1.Sub(t0)))
		nexts, raws = append(nexts, t1.Sub(t0)), append(raws, t2.Sub(t1))
		inNext += t1.Sub(t0)
		inRaw += t2.Sub(t1)
		inLeaf += t3.Sub(t2)
		inRawTimeout += time.Since(t3)
	}
	n := float64(b.N)
	b.ReportMetric(float64(inNext.Nanoseconds())/n, "next-ns/op")
	b.ReportMetric(float64(inRaw.Nanoseconds())/n, "raw-ns/op")
	b.ReportMetric(float64(inLeaf.Nanoseconds())/n, "leaf-ns/op")
	b.ReportMetric(float64(inRaw)/float64(inNext), "vs-raw-x")
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "vs-raw-median-x")
	slices.Sort(nexts)
	slices.Sort(raws)
	b.ReportMetric(float64(nexts[len(nexts)/2].Nanoseconds()), "next-med-ns")
	b.ReportMetric(float64(raws[len(raws)/2].Nanoseconds()), "raw-med-ns")
	b.ReportMetric(float64(inRawTimeout)/float64(inNext), "vs-raw-timeout-x")
	b.ReportMetric(float64(inLeaf)/float64(inNext), "vs-leaf-x")
}
