package idgen_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	_ "github.com/cosid-go/store/drivers/memory"
	"github.com/cosid-go/store/idgen"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// slowRanges is a memory store whose writes take a round trip, and which
// counts them.
type slowRanges struct {
	memoryRanges
	writes atomic.Int64
}

// memoryRanges is the memory driver's range store, as store.Open hands it
// out through Driver.
type memoryRanges interface {
	driver.Store
	driver.RangeStore
}

func (s *slowRanges) Next(ctx context.Context, key string, step int64) (int64, error) {
	s.writes.Add(1)
	time.Sleep(time.Millisecond) // stands for the round trip, not for synchronisation
	return s.memoryRanges.Next(ctx, key, step)
}

// TestSegmentsShareWrites: a Segment fetches one range at a time, so its own
// refills never race; the Segments of one store on one key share the
// store's writes when their refills meet (coalescing), and not when the
// store is opened without it. Either way every ID is handed out once.
func TestSegmentsShareWrites(t *testing.T) {
	for _, coalesce := range []bool{true, false} {
		mem, err := store.Open("memory", nil)
		if err != nil {
			t.Fatal(err)
		}
		d := &slowRanges{memoryRanges: rawdriver.Of(mem).(memoryRanges)}
		st, err := store.OpenDriver(d, store.WithCoalescing(coalesce))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		const gens, each = 8, 400
		segs := make([]*idgen.Segment, gens)
		for i := range segs {
			segs[i] = newSegment(t, st, "k", idgen.SegmentOptions{Step: 5})
		}
		var all collector
		var wg sync.WaitGroup
		for _, g := range segs {
			wg.Go(func() { all.add(take(t, g, each)...) })
		}
		wg.Wait()
		unique(t, "IDs of the segments", all.all())
		fetches := int64(0) // store calls, those cut short by Close included
		for _, g := range segs {
			if err := g.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			fetches += g.Stats().Fetches + g.Stats().FetchErrors
		}
		writes := d.writes.Load()
		t.Logf("coalescing %v: %d fetches, %d store writes", coalesce, fetches, writes)
		switch {
		case coalesce && writes >= fetches:
			t.Errorf("coalescing: %d store writes for %d fetches: no fetches shared a write", writes, fetches)
		case !coalesce && writes != fetches:
			t.Errorf("without coalescing: %d store writes for %d fetches, want one each", writes, fetches)
		}
	}
}

var _ driver.RangeStore = (*slowRanges)(nil)
