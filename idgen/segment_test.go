package idgen_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/idgen"
)

// newSegment opens a Segment closed when the test ends.
func newSegment(t *testing.T, st *store.Store, key string, opts idgen.SegmentOptions) *idgen.Segment {
	t.Helper()
	g, err := idgen.NewSegment(t.Context(), st, key, opts)
	return closedAtEnd(t, g, err)
}

// take calls NextID n times, failing the test on an error.
func take(t *testing.T, g *idgen.Segment, n int) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	out := make([]int64, 0, n)
	for range n {
		v, err := g.NextID(ctx)
		if err != nil {
			t.Fatalf("NextID after %d IDs: %v", len(out), err)
		}
		out = append(out, v)
	}
	return out
}

func want(t *testing.T, got []int64, from int64) {
	t.Helper()
	for i, v := range got {
		if v != from+int64(i) {
			t.Fatalf("ID %d is %d, want %d (IDs %v)", i, v, from+int64(i), got)
		}
	}
}

func TestSegmentSequence(t *testing.T) {
	st, _ := open(t, memoryBackend(t))
	g := newSegment(t, st, "orders", idgen.SegmentOptions{Step: 10})
	// One generator alone on a key hands out every value, in order,
	// across range boundaries.
	want(t, take(t, g, 35), 0)
}

func TestSegmentNoDuplicates(t *testing.T) { testSegmentNoDuplicates(t, memoryBackend(t)) }

// testSegmentNoDuplicates runs generators x goroutines on several stores
// (processes) over one key.
func testSegmentNoDuplicates(t *testing.T, b backend) {
	const stores, gens, workers, each = 3, 2, 4, 1500
	var all collector
	var wg sync.WaitGroup
	for s := range stores {
		// The test counts IDs, not timeouts: at load 30 a ZooKeeper write
		// took longer than the default 3s and the IDs came up short.
		st, _ := open(t, b, store.WithTimeout(30*time.Second))
		for n := range gens {
			// Small, unlike steps make ranges of generators interleave.
			g := newSegment(t, st, "shared/key", idgen.SegmentOptions{Step: int64(7 + 3*s + n)})
			for range workers {
				wg.Go(func() { all.add(takeInOrder(t, g, each)...) })
			}
		}
	}
	wg.Wait()
	all.wantUnique(t, "segment IDs", stores*gens*workers*each)
}

func TestSegmentPrefetchServesWhileStoreBlocked(t *testing.T) {
	st, f := open(t, memoryBackend(t))
	// Two fetches get through: the first range and one prefetched range.
	// Every later fetch is held in the store.
	release := f.next.hold(2)
	defer release()
	g := newSegment(t, st, "k", idgen.SegmentOptions{Step: 10, MinPrefetch: 15, MaxPrefetch: 15})
	// With 10 values and a distance of 15 the generator prefetches at once;
	// [10, 20) lands, then handing out 5 starts a third fetch, which the
	// store holds. It starts only after the second landed.
	want(t, take(t, g, 6), 0)
	f.next.waitHeld(t)

	// The store answers nothing now, yet every fetched value is served.
	want(t, take(t, g, 14), 6)

	// With the fetched values used up, NextID waits for the held fetch.
	got := make(chan int64, 1)
	go func() {
		v, err := g.NextID(t.Context())
		if err != nil {
			t.Errorf("NextID: %v", err)
		}
		got <- v
	}()
	eventually(t, "a caller waiting for the store", func() bool { return g.Stats().Waits == 1 })
	select {
	case v := <-got:
		t.Fatalf("NextID returned %d while the store held the fetch", v)
	default:
	}
	release()
	if v := <-got; v != 20 {
		t.Fatalf("after the store answered: got %d, want 20", v)
	}
}

func TestSegmentStoreFailure(t *testing.T) { testSegmentStoreFailure(t, memoryBackend(t)) }

// testSegmentStoreFailure: while the store fails, the generator serves
// what it fetched, then fails clearly, then resumes without duplicates.
func testSegmentStoreFailure(t *testing.T, b backend) {
	st, f := open(t, b)
	other, _ := open(t, b) // another process on the key
	g := newSegment(t, st, "k", idgen.SegmentOptions{Step: 10, MinPrefetch: 5, MaxPrefetch: 5})
	down := errors.New("injected: store down")
	f.next.setFail(down)

	ids := take(t, g, 10) // everything fetched is still served
	for range 2 {
		_, err := g.NextID(t.Context())
		if !errors.Is(err, idgen.ErrNoRange) || !errors.Is(err, down) {
			t.Fatalf("NextID with nothing fetched and the store down: %v, want ErrNoRange wrapping the store's error", err)
		}
	}
	if s := g.Stats(); s.FetchErrors < 2 {
		t.Errorf("FetchErrors = %d, want at least 2", s.FetchErrors)
	}
	r, err := other.Ranges().Next(t.Context(), "k", 25)
	if err != nil {
		t.Fatal(err)
	}

	f.next.setFail(nil)
	ids = append(ids, take(t, g, 40)...)
	increasing(t, "IDs across the failure", ids)
	for _, v := range ids {
		if r.Start <= v && v < r.End {
			t.Fatalf("ID %d is in [%d, %d), the range another store reserved", v, r.Start, r.End)
		}
	}
}

func TestSegmentSealedKey(t *testing.T) {
	b := memoryBackend(t)
	st, _ := open(t, b)
	g := newSegment(t, st, "k", idgen.SegmentOptions{Step: 10, MinPrefetch: 1, MaxPrefetch: 1})
	if _, err := st.Ranges().Seal(t.Context(), "k"); err != nil {
		t.Fatal(err)
	}
	want(t, take(t, g, 10), 0)
	_, err := g.NextID(t.Context())
	if !errors.Is(err, idgen.ErrNoRange) || !errors.Is(err, store.ErrSealed) {
		t.Fatalf("NextID on a sealed key: %v, want ErrNoRange and store.ErrSealed", err)
	}
	if _, err := idgen.NewSegment(t.Context(), st, "k", idgen.SegmentOptions{}); !errors.Is(err, store.ErrSealed) {
		t.Fatalf("NewSegment on a sealed key: %v, want store.ErrSealed", err)
	}
}

func TestSegmentAdaptivePrefetch(t *testing.T) {
	st, f := open(t, memoryBackend(t))
	release := f.next.hold(1)
	defer release()
	// Far longer than the first steps take, even under load: only the
	// deliberate wait below makes a range idle.
	const idle = time.Second
	g := newSegment(t, st, "k", idgen.SegmentOptions{Step: 100, MinPrefetch: 10, MaxPrefetch: 400, IdleAfter: idle})
	if d := g.Stats().Prefetch; d != 50 {
		t.Fatalf("initial distance %d, want Step/2 = 50", d)
	}
	take(t, g, 100) // the prefetch started at 50 and is held

	// A caller finds nothing left: the distance doubles.
	done := make(chan int64, 1)
	go func() {
		v, err := g.NextID(t.Context())
		if err != nil {
			t.Errorf("NextID: %v", err)
		}
		done <- v
	}()
	eventually(t, "a starving caller", func() bool { return g.Stats().Waits == 1 })
	if d := g.Stats().Prefetch; d != 100 {
		t.Fatalf("distance after starving %d, want 100", d)
	}
	release()
	want(t, []int64{<-done}, 100) // [100, 200) is current; [200, 300) is being fetched

	// Demand drops: the range takes longer than IdleAfter to hand out, and
	// the distance halves when the next one becomes current.
	waitUntil(time.Now().Add(idle + 10*time.Millisecond).UnixMilli())
	want(t, take(t, g, 100), 101)
	if s := g.Stats(); s.Prefetch != 50 || s.Waits != 1 {
		t.Fatalf("after an idle range: %+v, want distance 50 and still 1 wait", s)
	}
}

func TestSegmentClose(t *testing.T) {
	st, f := open(t, memoryBackend(t))
	release := f.next.hold(1)
	defer release()
	g, err := idgen.NewSegment(t.Context(), st, "k", idgen.SegmentOptions{Step: 4, MinPrefetch: 2, MaxPrefetch: 2})
	if err != nil {
		t.Fatal(err)
	}
	take(t, g, 4) // the prefetch is held in the store
	waiting := make(chan error, 1)
	go func() {
		_, err := g.NextID(t.Context())
		waiting <- err
	}()
	eventually(t, "a waiting caller", func() bool { return g.Stats().Waits == 1 })
	// Close ends the held fetch and the wait, and leaves no goroutine behind.
	if err := g.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-waiting; !errors.Is(err, idgen.ErrClosed) {
		t.Fatalf("waiting NextID after Close: %v, want ErrClosed", err)
	}
	if _, err := g.NextID(t.Context()); !errors.Is(err, idgen.ErrClosed) || !errors.Is(err, store.ErrClosed) {
		t.Fatalf("NextID after Close: %v, want idgen.ErrClosed, which is also store.ErrClosed", err)
	}
	if err := g.Close(t.Context()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestSegmentWaitHonoursContext(t *testing.T) {
	st, f := open(t, memoryBackend(t))
	release := f.next.hold(1)
	defer release()
	g := newSegment(t, st, "k", idgen.SegmentOptions{Step: 2, MinPrefetch: 1, MaxPrefetch: 1})
	take(t, g, 2)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := g.NextID(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("NextID with a cancelled context and nothing fetched: %v", err)
	}
}

func TestSegmentOptions(t *testing.T) {
	st, _ := open(t, memoryBackend(t))
	for _, tc := range []struct {
		key  string
		opts idgen.SegmentOptions
	}{
		{"k", idgen.SegmentOptions{Step: -1}},
		{"k", idgen.SegmentOptions{MinPrefetch: 10, MaxPrefetch: 5}},
		{"k", idgen.SegmentOptions{MinPrefetch: -1}},
		{"k", idgen.SegmentOptions{IdleAfter: -time.Second}},
		{"", idgen.SegmentOptions{}},
		{"a//b", idgen.SegmentOptions{}},
	} {
		if _, err := idgen.NewSegment(t.Context(), st, tc.key, tc.opts); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("NewSegment(%q, %+v): %v, want ErrInvalidArgument", tc.key, tc.opts, err)
		}
	}
	g := newSegment(t, st, "k", idgen.SegmentOptions{})
	if s := g.Stats(); s.Available != idgen.DefaultStep || s.Prefetch != idgen.DefaultStep/2 {
		t.Errorf("defaults: %+v, want %d available and distance %d", s, idgen.DefaultStep, idgen.DefaultStep/2)
	}
}

// TestSegmentMaxStep: a Step above the store's maximum step is refused,
// naming both and the option that raises it; a fetch of several steps
// never asks for more than the maximum, so demand above it is served in
// fetches of at most the maximum.
func TestSegmentMaxStep(t *testing.T) {
	st, _ := open(t, memoryBackend(t), store.WithMaxStep(100))
	_, err := idgen.NewSegment(t.Context(), st, "k", idgen.SegmentOptions{Step: math.MaxInt64})
	if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), "9223372036854775807") ||
		!strings.Contains(err.Error(), "store.WithMaxStep") {
		t.Fatalf("NewSegment with Step MaxInt64: %v, want ErrInvalidArgument naming the step and store.WithMaxStep", err)
	}
	if next, _, err := st.Ranges().Current(t.Context(), "k"); err != nil || next != 0 {
		t.Fatalf("the refused segment moved the key to %d (%v)", next, err)
	}
	// Step 30 and a prefetch of up to 3000: a fetch may want many steps,
	// and gets at most 3 of them (90 <= 100).
	g := newSegment(t, st, "k", idgen.SegmentOptions{Step: 30, MinPrefetch: 3000, MaxPrefetch: 3000})
	ids := take(t, g, 2000)
	if s := g.Stats(); s.FetchErrors != 0 {
		t.Errorf("%d fetch errors: a fetch asked for more than the maximum step", s.FetchErrors)
	}
	if len(ids) != 2000 {
		t.Errorf("took %d IDs, want 2000", len(ids))
	}
}
