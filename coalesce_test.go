package store_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	_ "github.com/cosid-go/store/drivers/memory"
	"github.com/cosid-go/store/internal/testing/leakcheck"
	"github.com/cosid-go/store/internal/testing/rangecheck"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// gate is a memory store whose Next can be held in flight, or answered as
// lost after it wrote, and which records the step of every write.
type gate struct {
	memoryRanges
	mu      sync.Mutex
	steps   []int64 // of every Next that reached the driver, in order
	holds   []chan struct{}
	held    chan int64 // receives the step of a write being held
	lose    func(step int64) bool
	delay   time.Duration // each write takes this long: a round trip
	lost    []store.Range // the writes answered as lost
	holdAll bool          // hold every write, not only the armed ones
}

var errLost = errors.New("connection lost before the answer (the write may have happened)")

// memoryRanges is the memory driver's range store, as store.Open hands it
// out through Driver.
type memoryRanges interface {
	driver.Store
	driver.RangeStore
}

func newGate(name string) *gate {
	st, err := store.Open("memory", map[string]string{"name": name})
	if err != nil {
		panic(err) // the memory driver refuses only unknown options
	}
	return &gate{memoryRanges: rawdriver.Of(st).(memoryRanges), held: make(chan int64, 16)}
}

// hold holds the next write until release is closed.
func (g *gate) hold() (release chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	release = make(chan struct{})
	g.holds = append(g.holds, release)
	return release
}

func (g *gate) Next(ctx context.Context, key string, step int64) (int64, error) {
	g.mu.Lock()
	g.steps = append(g.steps, step)
	var release chan struct{}
	if len(g.holds) > 0 {
		release, g.holds = g.holds[0], g.holds[1:]
	}
	all, lose, delay := g.holdAll, g.lose, g.delay
	g.mu.Unlock()
	if release != nil || all {
		g.held <- step
		select {
		case <-release: // nil for holdAll: only the context ends it
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if delay > 0 {
		time.Sleep(delay) // stands for the round trip, not for synchronisation
	}
	start, err := g.memoryRanges.Next(ctx, key, step)
	if err == nil && lose != nil && lose(step) {
		g.mu.Lock()
		g.lost = append(g.lost, store.Range{Start: start, End: start + step})
		g.mu.Unlock()
		return 0, errLost
	}
	return start, err
}

func (g *gate) writes() []int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.steps)
}

func openGate(t *testing.T, g *gate, opts ...store.Option) *store.Store {
	t.Helper()
	st, err := store.OpenDriver(g, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

type outcome struct {
	r   store.Range
	err error
}

// nextAsync calls Next on a goroutine of its own.
func nextAsync(ctx context.Context, st *store.Store, key string, step int64) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		r, err := st.Ranges().Next(ctx, key, step)
		ch <- outcome{r, err}
	}()
	return ch
}

// queue starts a call and waits until it waits for the next write, so that
// calls queued one after the other arrive in that order.
func queue(t *testing.T, ctx context.Context, st *store.Store, key string, step int64) <-chan outcome {
	t.Helper()
	before := store.Waiting(st, key)
	ch := nextAsync(ctx, st, key, step)
	eventually(t, fmt.Sprintf("%d calls waiting on %q", before+1, key), func() bool { return store.Waiting(st, key) == before+1 })
	return ch
}

// holdFirst starts a call of step 1 whose write is held, and returns it
// with the release of its write.
func holdFirst(t *testing.T, g *gate, st *store.Store, key string) (<-chan outcome, chan struct{}) {
	t.Helper()
	release := g.hold()
	first := nextAsync(t.Context(), st, key, 1)
	if step := <-g.held; step != 1 {
		t.Fatalf("held a write of %d, want 1", step)
	}
	return first, release
}

// heldGate opens a store on a gate and starts a call on key "k" whose
// write is held: the calls queued next wait for one write together.
func heldGate(t *testing.T, opts ...store.Option) (g *gate, st *store.Store, first <-chan outcome, release chan struct{}) {
	t.Helper()
	g = newGate("")
	st = openGate(t, g, opts...)
	first, release = holdFirst(t, g, st, "k")
	return g, st, first, release
}

func want(t *testing.T, what string, got outcome, start, end int64) {
	t.Helper()
	if got.err != nil || got.r != (store.Range{Start: start, End: end}) {
		t.Errorf("%s: got %v, %v; want [%d, %d)", what, got.r, got.err, start, end)
	}
}

func TestCoalescedNextSplitsOneWriteInArrivalOrder(t *testing.T) {
	g, st, first, release := heldGate(t)
	b := queue(t, t.Context(), st, "k", 2)
	c := queue(t, t.Context(), st, "k", 3)
	d := queue(t, t.Context(), st, "k", 4)
	close(release)
	want(t, "first", <-first, 0, 1)
	want(t, "second", <-b, 1, 3)
	want(t, "third", <-c, 3, 6)
	want(t, "fourth", <-d, 6, 10)
	if w := g.writes(); !slices.Equal(w, []int64{1, 9}) {
		t.Errorf("driver writes %v, want [1 9]: the three waiting calls in one write", w)
	}
}

func TestCoalescingOff(t *testing.T) {
	g := newGate("")
	st := openGate(t, g, store.WithCoalescing(false))
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 20 {
				if _, err := st.Ranges().Next(t.Context(), "k", 1); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n := len(g.writes()); n != 320 {
		t.Errorf("%d driver writes for 320 calls without coalescing", n)
	}
}

func TestCoalescedCallerLeavesBeforeWrite(t *testing.T) {
	g, st, first, release := heldGate(t)
	b := queue(t, t.Context(), st, "k", 10)
	ctx, cancel := context.WithCancel(t.Context())
	c := queue(t, ctx, st, "k", 100)
	d := queue(t, t.Context(), st, "k", 1000)
	cancel()
	if got := <-c; !errors.Is(got.err, context.Canceled) {
		t.Fatalf("cancelled call: %v, %v; want context.Canceled", got.r, got.err)
	}
	if n := store.Waiting(st, "k"); n != 2 {
		t.Errorf("%d calls waiting after one left, want 2", n)
	}
	close(release)
	want(t, "first", <-first, 0, 1)
	want(t, "before the one that left", <-b, 1, 11)
	want(t, "after the one that left", <-d, 11, 1011)
	if w := g.writes(); !slices.Equal(w, []int64{1, 1010}) {
		t.Errorf("driver writes %v, want [1 1010]: the call that left is not in the write", w)
	}
}

func TestCoalescedCallerLeavesDuringWrite(t *testing.T) {
	g, st, first, release := heldGate(t)
	// The call that leaves comes first in the batch: the write must not
	// depend on its context.
	ctx, cancel := context.WithCancel(t.Context())
	c := queue(t, ctx, st, "k", 100)
	b := queue(t, t.Context(), st, "k", 10)
	releaseBatch := g.hold()
	close(release)
	want(t, "first", <-first, 0, 1)
	if step := <-g.held; step != 110 {
		t.Fatalf("batch write of %d, want 110", step)
	}
	cancel() // while the batch's write is in flight
	if got := <-c; !errors.Is(got.err, context.Canceled) {
		t.Fatalf("call cancelled during the write: %v, %v; want context.Canceled at once", got.r, got.err)
	}
	close(releaseBatch)
	want(t, "the call that stayed", <-b, 101, 111)
	next, _, err := st.Ranges().Current(t.Context(), "k")
	if err != nil || next != 111 {
		t.Errorf("Current = %d, %v; want 111 (the share of the call that left is a gap)", next, err)
	}
	want(t, "the call after", <-nextAsync(t.Context(), st, "k", 1), 111, 112)
}

func TestCoalescedLostAnswerSkipsTheBatch(t *testing.T) {
	g, st, first, release := heldGate(t)
	var calls []<-chan outcome
	for _, step := range []int64{2, 3, 4} {
		calls = append(calls, queue(t, t.Context(), st, "k", step))
	}
	g.mu.Lock()
	g.lose = func(step int64) bool { return step == 9 }
	g.mu.Unlock()
	close(release)
	want(t, "first", <-first, 0, 1)
	for i, ch := range calls {
		if got := <-ch; !errors.Is(got.err, errLost) || got.r != (store.Range{}) {
			t.Errorf("call %d of the lost batch: %v, %v; want the lost answer's error", i, got.r, got.err)
		}
	}
	// The batch wrote [1, 10) but nobody got it: the next call starts after it.
	want(t, "after the lost batch", <-nextAsync(t.Context(), st, "k", 5), 10, 15)
}

func TestCoalescedExhaustionInArrivalOrder(t *testing.T) {
	const m = math.MaxInt64
	g := newGate("")
	st := openGate(t, g)
	if err := st.Ranges().Init(t.Context(), "k", m-150); err != nil {
		t.Fatal(err)
	}
	first, release := holdFirst(t, g, st, "k")
	var calls []<-chan outcome
	for _, step := range []int64{100, 60, 40, 10, 9} {
		calls = append(calls, queue(t, t.Context(), st, "k", step))
	}
	close(release)
	want(t, "first", <-first, m-150, m-149)
	// As separate calls in this order would: 100 fits, 60 does not, 40
	// fits, 10 does not, 9 ends exactly at MaxInt64.
	want(t, "100", <-calls[0], m-149, m-49)
	if got := <-calls[1]; !errors.Is(got.err, store.ErrExhausted) {
		t.Errorf("60: %v, %v; want ErrExhausted", got.r, got.err)
	}
	want(t, "40", <-calls[2], m-49, m-9)
	if got := <-calls[3]; !errors.Is(got.err, store.ErrExhausted) {
		t.Errorf("10: %v, %v; want ErrExhausted", got.r, got.err)
	}
	want(t, "9", <-calls[4], m-9, m)
}

func TestCoalescedStepsPastInt64(t *testing.T) {
	const half = math.MaxInt64 / 2
	g, st, first, release := heldGate(t, store.WithMaxStep(math.MaxInt64))
	x := queue(t, t.Context(), st, "k", half)
	y := queue(t, t.Context(), st, "k", half)
	z := queue(t, t.Context(), st, "k", 5)
	close(release)
	want(t, "first", <-first, 0, 1)
	want(t, "x", <-x, 1, 1+half)
	want(t, "y", <-y, 1+half, math.MaxInt64)
	if got := <-z; !errors.Is(got.err, store.ErrExhausted) {
		t.Errorf("z: %v, %v; want ErrExhausted", got.r, got.err)
	}
	for _, w := range g.writes() {
		if w < 1 || w > half+5 {
			t.Errorf("a driver write of %d: a batch whose steps' sum passes MaxInt64", w)
		}
	}
}

func TestCoalescedSealReachesEveryCaller(t *testing.T) {
	_, st, first, release := heldGate(t)
	b := queue(t, t.Context(), st, "k", 2)
	c := queue(t, t.Context(), st, "k", 3)
	if _, err := st.Ranges().Seal(t.Context(), "k"); err != nil {
		t.Fatal(err)
	}
	close(release)
	for i, ch := range []<-chan outcome{first, b, c} {
		if got := <-ch; !errors.Is(got.err, store.ErrSealed) {
			t.Errorf("call %d: %v, %v; want ErrSealed", i, got.r, got.err)
		}
	}
}

func TestCoalescedObserverSeesEachCaller(t *testing.T) {
	var mu sync.Mutex
	var ops []string
	g := newGate("")
	spans := map[*int]int{} // each call's own context, from Start to Op
	st := openGate(t, g, store.WithObserver(store.Observer{
		Start: func(ctx context.Context, _ store.OpStart) context.Context {
			return context.WithValue(ctx, spanKey{}, new(int))
		},
		End: func(ctx context.Context, e store.OpEnd) {
			mu.Lock()
			ops = append(ops, e.Op+" "+e.Key+" "+e.Outcome)
			if p, ok := ctx.Value(spanKey{}).(*int); ok {
				spans[p]++
			}
			mu.Unlock()
		},
	}))
	first, release := holdFirst(t, g, st, "k")
	b := queue(t, t.Context(), st, "k", 2)
	ctx, cancel := context.WithCancel(t.Context())
	c := queue(t, ctx, st, "k", 3)
	d := queue(t, t.Context(), st, "k", 4)
	cancel()
	<-c
	close(release)
	<-first
	<-b
	<-d
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(ops)
	if w := []string{"Next k canceled", "Next k ok", "Next k ok", "Next k ok"}; !slices.Equal(ops, w) {
		t.Errorf("observed %q, want %q (one per call)", ops, w)
	}
	if len(spans) != 4 {
		t.Errorf("End saw %d contexts from Start, want 4 (one per call): %v", len(spans), spans)
	}
}

type spanKey struct{}

func TestCoalescedWaitIsBoundedByTheTimeout(t *testing.T) {
	// 5s: the calls that queue must still be there when the first gives
	// up, however long a loaded machine takes to queue them.
	const timeout = 5 * time.Second
	g := newGate("")
	g.holdAll = true // every write is held until its context ends
	st := openGate(t, g, store.WithTimeout(timeout))
	// The first call gives up once the others have queued behind it, so
	// that they are all still there for the write. (A 200ms deadline
	// raced their queueing: at load 30 CI saw "2 calls waiting on "k":
	// not within 10s".)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	first := nextAsync(ctx, st, "k", 1)
	<-g.held
	var calls []<-chan outcome
	var starts []time.Time
	for _, step := range []int64{2, 3} {
		starts = append(starts, time.Now())
		calls = append(calls, queue(t, t.Context(), st, "k", step))
	}
	cancel()
	if got := <-first; !errors.Is(got.err, context.Canceled) {
		t.Errorf("first: %v, %v; want Canceled", got.r, got.err)
	}
	if step := <-g.held; step != 5 {
		t.Errorf("batch write of %d, want 5", step)
	}
	for i, ch := range calls {
		got := <-ch
		took := time.Since(starts[i])
		if !errors.Is(got.err, context.DeadlineExceeded) {
			t.Errorf("call %d: %v, %v; want DeadlineExceeded", i, got.r, got.err)
		}
		if took > timeout+3*time.Second {
			t.Errorf("call %d returned after %v: its wait is not bounded by the timeout %v", i, took, timeout)
		}
	}
	if next, _, err := st.Ranges().Current(t.Context(), "k"); err != nil || next != 0 {
		t.Errorf("Current = %d, %v; want 0: no write was made", next, err)
	}
}

func TestCoalescedCloseEndsTheWaits(t *testing.T) {
	defer leakcheck.VerifyNone(t, goleak.IgnoreCurrent())
	g := newGate("")
	st, err := store.OpenDriver(g)
	if err != nil {
		t.Fatal(err)
	}
	first, release := holdFirst(t, g, st, "k")
	b := queue(t, t.Context(), st, "k", 2)
	c := queue(t, t.Context(), st, "k", 3)
	releaseBatch := g.hold()
	close(release)
	want(t, "first", <-first, 0, 1)
	if step := <-g.held; step != 5 {
		t.Fatalf("batch write of %d, want 5", step)
	}
	d := queue(t, t.Context(), st, "k", 7) // for the write after the batch's
	closed := make(chan error)
	go func() { closed <- st.Close() }()
	eventually(t, "closed", func() bool {
		_, _, err := st.Ranges().Current(t.Context(), "other")
		return errors.Is(err, store.ErrClosed)
	})
	close(releaseBatch) // the memory driver's Close does not end a write in flight
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	for i, ch := range []<-chan outcome{b, c, d} {
		if got := <-ch; !errors.Is(got.err, store.ErrClosed) {
			t.Errorf("call %d: %v, %v; want ErrClosed", i, got.r, got.err)
		}
	}
	if w := g.writes(); !slices.Equal(w, []int64{1, 5}) {
		t.Errorf("driver writes %v, want [1 5]: none after Close", w)
	}
}

// TestCoalescedManyCallersSeveralStores: goroutines of four stores on one
// key, with writes that take a round trip, some answers lost after the
// write and some callers cancelled: every range has its step, and no value
// is handed out twice.
func TestCoalescedManyCallersSeveralStores(t *testing.T) {
	name := fmt.Sprintf("coalesce-%d", rand.Int64())
	const stores, goroutines, calls = 4, 16, 60
	var gates []*gate
	var sts []*store.Store
	for i := range stores {
		g := newGate(name)
		g.delay = 200 * time.Microsecond
		rnd := rand.New(rand.NewPCG(uint64(i), 1))
		var mu sync.Mutex
		g.lose = func(int64) bool { mu.Lock(); defer mu.Unlock(); return rnd.IntN(20) == 0 }
		gates = append(gates, g)
		sts = append(sts, openGate(t, g))
	}
	var got rangecheck.Handed
	n := rangecheck.Callers{Stores: sts, PerStore: goroutines, Calls: calls, MaxStep: 20,
		CancelWithin: 400 * time.Microsecond, Seed: 100,
		Expected: func(err error) bool { return errors.Is(err, errLost) },
	}.Run(t, "k", &got)
	rs := got.Check(t)
	writes := 0
	for i, g := range gates {
		writes += len(g.writes())
		g.mu.Lock()
		for _, r := range g.lost {
			got.Add(i, r) // a lost write's values are never handed out either
		}
		g.mu.Unlock()
	}
	got.Check(t)
	next, _, err := sts[0].Ranges().Current(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if end := rs[len(rs)-1].End; end > next {
		t.Errorf("a range ends at %d, past the key's next value %d", end, next)
	}
	t.Logf("%d calls got a range, %d lost answers, %d cancelled; %d driver writes", n.OK.Load(), n.Failed.Load(), n.Cancelled.Load(), writes)
	if n.Failed.Load() == 0 || n.Cancelled.Load() == 0 {
		t.Errorf("no lost answer or no cancelled call: the test proved less than it claims")
	}
	if int64(writes) >= n.OK.Load()+n.Failed.Load() {
		t.Errorf("%d driver writes for %d calls answered by the driver: no call shared a write", writes, n.OK.Load()+n.Failed.Load())
	}
}

// fourStores opens four stores on one fresh shared state, each write
// taking 100µs so that calls queue behind it.
func fourStores(t *testing.T) []*store.Store {
	name := fmt.Sprintf("coalesce-%d", rand.Int64())
	var sts []*store.Store
	for range 4 {
		g := newGate(name)
		g.delay = 100 * time.Microsecond
		sts = append(sts, openGate(t, g))
	}
	return sts
}

// TestCoalescedRangesTile: without faults, the ranges of many callers of
// several stores tile [0, next) with no gap.
func TestCoalescedRangesTile(t *testing.T) {
	sts := fourStores(t)
	var got rangecheck.Handed
	var wg sync.WaitGroup
	for i, st := range sts {
		for w := range 16 {
			wg.Go(func() {
				rnd := rand.New(rand.NewPCG(uint64(i), uint64(w)))
				for range 50 {
					r, err := st.Ranges().Next(t.Context(), "k", 1+rnd.Int64N(10))
					if err != nil {
						t.Error(err)
						return
					}
					got.Add(i, r)
				}
			})
		}
	}
	wg.Wait()
	rs := got.Check(t)
	end := int64(0)
	for _, r := range rs {
		if r.Start != end {
			t.Fatalf("gap before %v: [%d, %d) was handed out to nobody", r, end, r.Start)
		}
		end = r.End
	}
	if next, _, err := sts[0].Ranges().Current(t.Context(), "k"); err != nil || next != end {
		t.Errorf("Current = %d, %v; want %d", next, err, end)
	}
}

// panicky is a memory store whose Next panics while armed, as a buggy
// driver or wrapper may.
type panicky struct {
	*gate
	armed atomic.Bool
}

func (p *panicky) Next(ctx context.Context, key string, step int64) (int64, error) {
	if p.armed.Load() {
		panic("driver bug")
	}
	return p.gate.Next(ctx, key, step)
}

// nextRecovered calls Next and returns what it panicked with, if it did.
func nextRecovered(ctx context.Context, st *store.Store, key string, step int64) (p any) {
	defer func() { p = recover() }()
	st.Ranges().Next(ctx, key, step)
	return nil
}

// TestCoalescedPanicFreesTheKey: a driver that panics in Next (recovered
// by the caller, as net/http does for a handler) leaves the key usable: the
// next calls get ranges, and the calls waiting on the write that panicked
// panic too, on their own goroutines, as each would have alone.
func TestCoalescedPanicFreesTheKey(t *testing.T) {
	p := &panicky{gate: newGate("")}
	st, err := store.OpenDriver(p, store.WithTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// A call writing alone panics.
	p.armed.Store(true)
	if got := nextRecovered(t.Context(), st, "k", 1); got == nil {
		t.Fatal("no panic")
	}
	p.armed.Store(false)
	r, err := st.Ranges().Next(t.Context(), "k", 1)
	if err != nil || r != (store.Range{Start: 0, End: 1}) {
		t.Fatalf("after a panic: %v, %v; want [0, 1): the key stayed busy", r, err)
	}
	// A batch's write panics: each waiting call panics, then the key works.
	first, release := holdFirst(t, p.gate, st, "k")
	panics := make(chan any, 2)
	for range 2 {
		before := store.Waiting(st, "k")
		go func() { panics <- nextRecovered(t.Context(), st, "k", 1) }()
		eventually(t, "a call waiting", func() bool { return store.Waiting(st, "k") == before+1 })
	}
	p.armed.Store(true)
	close(release)
	if got := <-first; got.err != nil {
		t.Fatal(got.err)
	}
	for range 2 {
		if got := <-panics; got == nil {
			t.Error("a call of the batch whose write panicked returned without panicking")
		}
	}
	p.armed.Store(false)
	r, err = st.Ranges().Next(t.Context(), "k", 1)
	if err != nil || r.Len() != 1 {
		t.Fatalf("after a batch's panic: %v, %v; want a range", r, err)
	}
}

// TestCoalescedExhaustionManyStores: goroutines of four stores (one without
// coalescing) run a key into the end of the int64 range, with lost answers
// and cancelled callers: every range has its step and lies in the room,
// none overlaps another or a lost write, and a call refused as exhausted
// really did not fit (the key's next value, read right after, leaves no
// room for it: it only grows).
func TestCoalescedExhaustionManyStores(t *testing.T) {
	const room = 20000
	name := fmt.Sprintf("coalesce-%d", rand.Int64())
	var gates []*gate
	var sts []*store.Store
	for i := range 4 {
		g := newGate(name)
		g.delay = 100 * time.Microsecond
		rnd := rand.New(rand.NewPCG(uint64(i), 2))
		var mu sync.Mutex
		g.lose = func(int64) bool { mu.Lock(); defer mu.Unlock(); return rnd.IntN(20) == 0 }
		gates = append(gates, g)
		sts = append(sts, openGate(t, g, store.WithCoalescing(i != 3), store.WithMaxStep(math.MaxInt64)))
	}
	if err := sts[0].Ranges().Init(t.Context(), "k", math.MaxInt64-room); err != nil {
		t.Fatal(err)
	}
	var got rangecheck.Handed
	var refused atomic.Int64
	var wg sync.WaitGroup
	for i, st := range sts {
		for w := range 8 {
			wg.Go(func() {
				rnd := rand.New(rand.NewPCG(uint64(i), uint64(w)+7))
				for range 60 {
					step := 1 + rnd.Int64N(200)
					if rnd.IntN(10) == 0 {
						step = math.MaxInt64 - rnd.Int64N(room) // sums that overflow
					}
					ctx, cancel := context.WithCancel(t.Context())
					if rnd.IntN(8) == 0 {
						time.AfterFunc(time.Duration(rnd.IntN(300))*time.Microsecond, cancel)
					}
					r, err := st.Ranges().Next(ctx, "k", step)
					cancel()
					switch {
					case err == nil:
						if r.Len() != step || r.Start < math.MaxInt64-room {
							t.Errorf("range %v for a step of %d", r, step)
						}
						got.Add(i, r)
					case errors.Is(err, store.ErrExhausted):
						refused.Add(1)
						next, _, err := st.Ranges().Current(t.Context(), "k")
						if err == nil && next <= math.MaxInt64-step {
							t.Errorf("a step of %d was refused as exhausted, yet it fits at %d after", step, next)
						}
					case errors.Is(err, errLost), errors.Is(err, context.Canceled):
					default:
						t.Errorf("Next: %v", err)
					}
				}
			})
		}
	}
	wg.Wait()
	for i, g := range gates {
		g.mu.Lock()
		for _, r := range g.lost {
			got.Add(i, r)
		}
		g.mu.Unlock()
	}
	got.Check(t)
	t.Logf("%d ranges, %d refused", got.Len(), refused.Load())
	if refused.Load() == 0 {
		t.Error("nothing was refused: the test did not reach the end of the range")
	}
}

// TestCoalescedCloseUnderLoad: a store closed while many callers of one key
// wait and write (some cancelled, some answers lost) ends every call with a
// range or an error, leaves no goroutine, and a store opened after it on
// the same storage hands out nothing that one did.
func TestCoalescedCloseUnderLoad(t *testing.T) {
	defer leakcheck.VerifyNone(t, goleak.IgnoreCurrent())
	name := fmt.Sprintf("coalesce-%d", rand.Int64())
	var got rangecheck.Handed
	for round := range 3 {
		g := newGate(name)
		g.delay = 200 * time.Microsecond
		rnd := rand.New(rand.NewPCG(uint64(round), 3))
		var mu sync.Mutex
		g.lose = func(int64) bool { mu.Lock(); defer mu.Unlock(); return rnd.IntN(10) == 0 }
		st, err := store.OpenDriver(g)
		if err != nil {
			t.Fatal(err)
		}
		var ok atomic.Int64
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Go(func() {
				rnd := rand.New(rand.NewPCG(uint64(round), uint64(w)))
				for {
					step := 1 + rnd.Int64N(20)
					ctx, cancel := context.WithCancel(t.Context())
					if rnd.IntN(6) == 0 {
						time.AfterFunc(time.Duration(rnd.IntN(300))*time.Microsecond, cancel)
					}
					r, err := st.Ranges().Next(ctx, "k", step)
					cancel()
					switch {
					case err == nil:
						ok.Add(1)
						got.Step(t, round, r, step)
					case errors.Is(err, store.ErrClosed):
						return
					case errors.Is(err, errLost), errors.Is(err, context.Canceled):
					default:
						t.Errorf("Next: %v", err)
						return
					}
				}
			})
		}
		eventually(t, "200 ranges handed out", func() bool { return ok.Load() >= 200 })
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		g.mu.Lock()
		for _, r := range g.lost {
			got.Add(round, r)
		}
		g.mu.Unlock()
	}
	got.Check(t)
}

// TestCoalescedSealRacesNext: a key sealed while callers of four stores
// share writes on it: every range handed out ends by the sealed value, and
// once Seal returned, no call that starts gets a range.
func TestCoalescedSealRacesNext(t *testing.T) {
	sts := fourStores(t)
	var got rangecheck.Handed
	var sealedAt atomic.Int64
	sealedAt.Store(-1)
	var wg sync.WaitGroup
	for i, st := range sts {
		for w := range 8 {
			wg.Go(func() {
				rnd := rand.New(rand.NewPCG(uint64(i), uint64(w)))
				for {
					after := sealedAt.Load() >= 0
					r, err := st.Ranges().Next(t.Context(), "k", 1+rnd.Int64N(20))
					switch {
					case err == nil && after:
						t.Errorf("%v handed out by a call started after Seal returned", r)
						return
					case err == nil:
						got.Add(i, r)
					case errors.Is(err, store.ErrSealed):
						return
					default:
						t.Errorf("Next: %v", err)
						return
					}
				}
			})
		}
	}
	eventually(t, "300 ranges handed out", func() bool {
		return got.Len() >= 300
	})
	next, err := sts[1].Ranges().Seal(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	sealedAt.Store(next)
	wg.Wait()
	for _, r := range got.Check(t) {
		if r.End > next {
			t.Errorf("%v handed out past the sealed value %d", r, next)
		}
	}
}
