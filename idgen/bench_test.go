package idgen_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/drivers/memory"
	"github.com/cosid-go/store/idgen"
)

// The baseline: a plain atomic counter, the fastest unique IDs a process
// can have, measured in the same run as the generators.
var counter atomic.Int64

func BenchmarkAtomicCounter(b *testing.B) {
	for b.Loop() {
		counter.Add(1)
	}
	perSecond(b)
}

func BenchmarkAtomicCounterParallel(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			counter.Add(1)
		}
	})
	perSecond(b)
}

// nextIDsParallel is the parallel benchmarks' loop: NextID from
// GOMAXPROCS goroutines at once. A call through the interface costs
// nothing next to the contention those measure (the serial loops call
// their generator directly).
func nextIDsParallel(b *testing.B, g interface {
	NextID(context.Context) (int64, error)
}) {
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := g.NextID(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func perSecond(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "M-ids/s")
}

func benchStore(b *testing.B) *store.Store {
	st, err := memory.OpenStore(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

func benchSegment(b *testing.B, step int64) *idgen.Segment {
	g, err := idgen.NewSegment(context.Background(), benchStore(b), "bench", idgen.SegmentOptions{Step: step})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close(context.Background()) })
	return g
}

// Steps: the default, and one large enough that store calls vanish from
// the figure, leaving the hot path alone.
var steps = []int64{idgen.DefaultStep, 1_000_000}

func BenchmarkSegmentNext(b *testing.B) {
	for _, step := range steps {
		b.Run(fmt.Sprintf("step=%d", step), func(b *testing.B) {
			g := benchSegment(b, step)
			ctx := context.Background()
			for b.Loop() {
				if _, err := g.NextID(ctx); err != nil {
					b.Fatal(err)
				}
			}
			perSecond(b)
			b.ReportMetric(float64(g.Stats().Waits), "waits")
		})
	}
}

func BenchmarkSegmentNextParallel(b *testing.B) {
	for _, step := range steps {
		b.Run(fmt.Sprintf("step=%d", step), func(b *testing.B) {
			g := benchSegment(b, step)
			nextIDsParallel(b, g)
			perSecond(b)
			b.ReportMetric(float64(g.Stats().Waits), "waits")
		})
	}
}

func benchSnowflake(b *testing.B, opts idgen.SnowflakeOptions) *idgen.Snowflake {
	ns := store.Namespace{Name: "bench", Limit: 1024, Tolerance: time.Second}
	g, err := idgen.NewSnowflake(context.Background(), benchStore(b), ns, "bench", opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close(context.Background()) })
	return g
}

// ofLimit reports IDs per time unit and their share of the layout's limit
// (sequence values per unit): a share near 1 means the code is not what
// bounds the rate.
func ofLimit(b *testing.B, g *idgen.Snowflake) {
	l := g.Layout()
	units := float64(b.Elapsed()) / float64(l.Unit)
	perUnit := float64(b.N) / units
	b.ReportMetric(perUnit, "ids/unit")
	b.ReportMetric(perUnit/float64(int64(1)<<l.SequenceBits), "of-limit")
}

// BenchmarkSnowflakeNextID runs on the real clock, never ahead of it: once a
// unit's sequence is used up, NextID waits for the next unit. Its rate is the
// layout's limit, less what the code loses.
func BenchmarkSnowflakeNextID(b *testing.B) {
	g := benchSnowflake(b, idgen.SnowflakeOptions{MaxAhead: -1})
	ctx := context.Background()
	for b.Loop() {
		if _, err := g.NextID(ctx); err != nil {
			b.Fatal(err)
		}
	}
	ofLimit(b, g)
}

func BenchmarkSnowflakeNextIDParallel(b *testing.B) {
	g := benchSnowflake(b, idgen.SnowflakeOptions{MaxAhead: -1})
	nextIDsParallel(b, g)
	ofLimit(b, g)
}

// BenchmarkSnowflakeNextIDCode measures the code alone: an injected clock
// moves one unit every 1024 readings, so a sequence is never used up.
// x-limit is how many times the layout's limit the code could issue.
func BenchmarkSnowflakeNextIDCode(b *testing.B) {
	var reads atomic.Int64
	base := time.Now().UnixMilli()
	clock := func() time.Time { return time.UnixMilli(base + reads.Add(1)/1024) }
	g := benchSnowflake(b, idgen.SnowflakeOptions{Clock: clock})
	ctx := context.Background()
	for b.Loop() {
		if _, err := g.NextID(ctx); err != nil {
			b.Fatal(err)
		}
	}
	l := g.Layout()
	perUnit := float64(l.Unit) / (float64(b.Elapsed()) / float64(b.N))
	b.ReportMetric(perUnit/float64(int64(1)<<l.SequenceBits), "x-limit")
}
