package idgen

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cosid-go/store"
)

// DefaultStep is the range size of a Segment that leaves Step zero.
const DefaultStep = 1000

// SegmentOptions tune NewSegment. The zero value is the default.
type SegmentOptions struct {
	// Step is how many values a range reserves (default DefaultStep); when
	// demand outruns the prefetch, one store call reserves several steps at
	// once (up to MaxPrefetch values). Values left in memory when the
	// process ends are never handed out: a larger step means fewer store
	// calls and larger gaps after a restart. It is at most the store's
	// maximum step (store.DefaultMaxStep unless store.WithMaxStep raises
	// it), which also caps what one store call reserves.
	Step int64

	// The prefetch distance: the next range is fetched in the background
	// when fewer values than the distance remain (in the current range and
	// the ranges already fetched). It starts at Step/2, doubles up to
	// MaxPrefetch each time callers find nothing left and must wait, and
	// halves down to MinPrefetch each time a range took longer than
	// IdleAfter to hand out (demand is low). Defaults: MinPrefetch Step/4
	// (at least 1), MaxPrefetch 16*Step, IdleAfter DefaultIdleAfter.
	MinPrefetch, MaxPrefetch int64
	IdleAfter                time.Duration
}

// DefaultIdleAfter is SegmentOptions.IdleAfter when left zero.
const DefaultIdleAfter = time.Second

// Segment hands out int64 IDs from ranges reserved on a RangeStore key. IDs
// are unique across every generator of the key (in any process), and
// increase within one generator; values reserved but not handed out before
// Close or a crash are skipped (gaps, never duplicates).
//
// NextID takes a value from the current range with one atomic add. The
// following range is fetched in the background before the current one runs
// out, so callers wait for the store only when demand outruns the prefetch;
// the distance adapts to that (see SegmentOptions). A Segment fetches one
// range at a time; the fetches of several Segments of one store on one key
// share the store's writes when they meet (store.WithCoalescing).
//
// A Segment is safe for concurrent use.
type Segment struct {
	cur    atomic.Pointer[segment] // the range values are taken from
	st     *store.Store            // reports prefetch growth
	ranges *store.RangeStore
	key    string
	step   int64
	most   int64 // the store's maximum step: the most one fetch reserves
	minD   int64
	maxD   int64
	idle   time.Duration
	ctx    context.Context // the fetches' context: ends with Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the fetch goroutine

	mu        sync.Mutex
	queue     []store.Range // fetched, not yet current
	queued    int64         // values in queue
	dist      int64         // the prefetch distance
	fetching  bool
	wake      chan struct{} // closed when a fetch attempt ends
	attempts  uint64        // fetch attempts started
	failed    uint64        // the last attempt that failed
	err       error         // its error
	since     time.Time     // when the current range became current
	starvedOn *segment      // the range whose exhaustion last grew dist
	closed    bool
	stats     SegmentStats
	handed    int64 // values of the ranges used up before the current one
}

// segment is one range being handed out; next runs past end once it is used
// up, and callers then move to the following one.
type segment struct {
	next    atomic.Int64
	trigger atomic.Int64 // the value whose handing out starts a prefetch
	start   int64
	end     int64
}

func newSegment(r store.Range) *segment {
	s := &segment{start: r.Start, end: r.End}
	s.next.Store(r.Start)
	s.trigger.Store(-1)
	return s
}

// closedSegment is current after Close: it has no values, so every NextID
// goes to the slow path and finds the generator closed.
var closedSegment = newSegment(store.Range{})

// SegmentStats counts a Segment's work, for metrics and tests.
type SegmentStats struct {
	Fetches     int64 // store calls that reserved values (one may reserve several steps)
	FetchErrors int64 // store calls that failed
	Waits       int64 // NextID calls that found nothing left and waited for a fetch
	Available   int64 // values fetched and not yet handed out
	Prefetch    int64 // the current prefetch distance

	// Issued counts the IDs handed out (an ID handed out as Close runs
	// may be missed).
	Issued int64
	// Start, Next and End are the range values are taken from: Next is
	// the next value it hands out (at or past End once it is used up).
	// All zero after Close.
	Start, Next, End int64
	// PrefetchAt is the value whose handing out starts the next fetch, or
	// -1 while a fetch runs or none is due.
	PrefetchAt int64
	// Err is the error of the last fetch, nil once one succeeded: wrapping
	// store.ErrSealed, the key was sealed and the generator stops when the
	// values in hand run out.
	Err    error
	Closed bool // Close was called
}

// NewSegment opens a generator on key of st's RangeStore and fetches its
// first range (so a bad key or an unreachable store fails here).
func NewSegment(ctx context.Context, st *store.Store, key string, opts SegmentOptions) (*Segment, error) {
	if opts.Step == 0 {
		opts.Step = DefaultStep
	}
	if opts.Step < 1 {
		return nil, invalid("segment step %d is less than 1", opts.Step)
	}
	if opts.Step > st.MaxStep() {
		return nil, invalid("segment step %d is above the store's maximum step %d (raise it with store.WithMaxStep when opening the store)", opts.Step, st.MaxStep())
	}
	if opts.MaxPrefetch == 0 {
		opts.MaxPrefetch = opts.Step
		if opts.Step <= math.MaxInt64/16 {
			opts.MaxPrefetch = 16 * opts.Step
		}
	}
	if opts.MinPrefetch == 0 {
		opts.MinPrefetch = max(1, min(opts.Step/4, opts.MaxPrefetch))
	}
	if opts.MinPrefetch < 1 || opts.MaxPrefetch < opts.MinPrefetch {
		return nil, invalid("segment prefetch bounds [%d, %d] are not 1 <= min <= max", opts.MinPrefetch, opts.MaxPrefetch)
	}
	if opts.IdleAfter == 0 {
		opts.IdleAfter = DefaultIdleAfter
	}
	if opts.IdleAfter < 0 {
		return nil, invalid("segment idle time %v is negative", opts.IdleAfter)
	}
	ranges := st.Ranges()
	r, err := ranges.Next(ctx, key, opts.Step)
	if err != nil {
		return nil, fmt.Errorf("idgen: NewSegment: %w", err) // the store's error names the key
	}
	g := &Segment{
		st:     st,
		ranges: ranges,
		key:    key,
		step:   opts.Step,
		most:   st.MaxStep(),
		minD:   opts.MinPrefetch,
		maxD:   opts.MaxPrefetch,
		idle:   opts.IdleAfter,
		since:  time.Now(),
		dist:   min(max(opts.Step/2, opts.MinPrefetch), opts.MaxPrefetch),
		wake:   make(chan struct{}),
	}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	g.stats.Fetches = 1
	g.cur.Store(newSegment(r))
	g.mu.Lock()
	g.arm()
	g.mu.Unlock()
	return g, nil
}

// NextID returns a new ID. It waits for the store only when every fetched
// value is used up; if the store then fails, it returns an error wrapping
// ErrNoRange and the store's error, and a later call tries again.
func (g *Segment) NextID(ctx context.Context) (int64, error) {
	for {
		s := g.cur.Load()
		v := s.next.Add(1) - 1
		// v >= start also refuses a counter that wrapped past MaxInt64.
		if v < s.end && v >= s.start {
			if v == s.trigger.Load() {
				g.prefetch()
			}
			return v, nil
		}
		if err := g.advance(ctx, s); err != nil {
			return 0, err
		}
	}
}

// available returns the values not yet handed out; g.mu is held.
func (g *Segment) available() int64 {
	s := g.cur.Load()
	return max(0, s.end-s.next.Load()) + g.queued
}

// arm starts a fetch if fewer than dist values are available, or else sets
// the current range's trigger to the value at which that will be so;
// g.mu is held.
func (g *Segment) arm() {
	if g.closed || g.fetching {
		return
	}
	s := g.cur.Load()
	if g.available() < g.dist {
		g.startFetch()
		return
	}
	s.trigger.Store(s.end - (g.dist - g.queued))
}

// prefetch runs when a caller hands out the trigger value.
func (g *Segment) prefetch() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed && !g.fetching && g.available() < g.dist {
		g.startFetch()
	}
}

// startFetch starts the fetch goroutine; g.mu is held and no fetch runs.
func (g *Segment) startFetch() {
	g.fetching = true
	g.attempts++
	g.wg.Add(1)
	go g.fetch()
}

// fetch reserves ranges until dist values are available, or one fails.
func (g *Segment) fetch() {
	defer g.wg.Done()
	g.mu.Lock()
	n := g.want()
	g.mu.Unlock()
	for {
		r, err := g.ranges.Next(g.ctx, g.key, n)
		g.mu.Lock()
		if err == nil {
			g.stats.Fetches++
			g.err = nil
			g.queue = append(g.queue, r)
			g.queued += r.Len()
		} else {
			g.stats.FetchErrors++
			g.err = err
			g.failed = g.attempts
		}
		close(g.wake)
		g.wake = make(chan struct{})
		if err == nil && !g.closed && g.available() < g.dist {
			g.attempts++
			n = g.want()
			g.mu.Unlock()
			continue
		}
		g.fetching = false
		if err != nil && !g.closed {
			// Try again halfway through what is left, rather than at once
			// against a store that just failed; with nothing left, the
			// next caller tries.
			s := g.cur.Load()
			if next := s.next.Load(); s.end-next > 1 {
				s.trigger.Store(next + (s.end-next)/2)
			}
		} else {
			g.arm()
		}
		g.mu.Unlock()
		return
	}
}

// want returns how many values the next fetch reserves: the steps needed
// to bring the available values up to dist, in one store call rather than
// one call per step, which would cap the rate at a step per round trip;
// g.mu is held.
func (g *Segment) want() int64 {
	short := g.dist - g.available()
	if short <= g.step {
		return g.step
	}
	k := min((short+g.step-1)/g.step, max(1, g.maxD/g.step), g.most/g.step)
	if k < 1 || k > math.MaxInt64/g.step {
		return g.step
	}
	return k * g.step
}

// advance moves past the used-up range old: to the next fetched range, or,
// with none, waits for a fetch.
func (g *Segment) advance(ctx context.Context, old *segment) error {
	g.mu.Lock()
	waited := false
	for {
		switch {
		case g.closed:
			g.mu.Unlock()
			return fmt.Errorf("%w: segment %q", ErrClosed, g.key)
		case g.cur.Load() != old:
			g.mu.Unlock() // another caller moved on already
			return nil
		case len(g.queue) > 0:
			r := g.queue[0]
			g.queue = g.queue[1:]
			g.handed += old.end - old.start // every value of old was handed out
			g.queued -= r.Len()
			g.cur.Store(newSegment(r))
			now := time.Now()
			if now.Sub(g.since) > g.idle {
				// Demand is low: a smaller distance leaves fewer values
				// unused when the process ends.
				g.dist = max(g.minD, g.dist/2)
			}
			g.since = now
			g.arm()
			g.mu.Unlock()
			return nil
		}
		// Nothing left: callers outran the prefetch.
		if !waited {
			waited = true
			g.stats.Waits++
		}
		grown := int64(0)
		if g.starvedOn != old {
			g.starvedOn = old
			before := g.dist
			if g.dist > g.maxD/2 {
				g.dist = g.maxD // doubling would pass it (or overflow)
			} else {
				g.dist *= 2
			}
			if g.dist > before {
				grown = g.dist
			}
		}
		if !g.fetching {
			g.startFetch()
		}
		attempt, wake := g.attempts, g.wake
		g.mu.Unlock()
		if grown > 0 {
			g.st.Report(store.Event{Kind: store.PrefetchGrown, Key: g.key, Count: grown})
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return fmt.Errorf("idgen: segment %q: waiting for a range: %w", g.key, ctx.Err())
		}
		g.mu.Lock()
		if g.failed >= attempt && len(g.queue) == 0 && !g.closed && g.cur.Load() == old {
			err := g.err
			g.mu.Unlock()
			return fmt.Errorf("%w: %w", ErrNoRange, err) // the store's error names the key
		}
	}
}

// Stats returns the generator's counters.
func (g *Segment) Stats() SegmentStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.stats
	st.Available = g.available()
	st.Prefetch = g.dist
	st.Err, st.Closed, st.Issued = g.err, g.closed, g.handed
	if s := g.cur.Load(); !g.closed {
		next := s.next.Load()
		st.Start, st.Next, st.End = s.start, next, s.end
		st.Issued += min(next, s.end) - s.start
		st.PrefetchAt = s.trigger.Load()
		if g.fetching || st.PrefetchAt < next || st.PrefetchAt >= s.end {
			st.PrefetchAt = -1
		}
	}
	return st
}

// Key returns the RangeStore key the generator takes its ranges from.
func (g *Segment) Key() string { return g.key }

// Close stops the generator: later calls of NextID return ErrClosed, and a
// fetch in flight is cancelled. Values not handed out are skipped for good.
// It waits for the fetch to end, or for ctx to end, whichever is first (the
// fetch then ends on its own, as soon as the store answers the
// cancellation). Closing twice returns nil.
func (g *Segment) Close(ctx context.Context) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	if s := g.cur.Load(); s != closedSegment {
		g.handed += min(s.next.Load(), s.end) - s.start
	}
	g.cur.Store(closedSegment)
	g.queue, g.queued = nil, 0
	close(g.wake)
	g.wake = make(chan struct{})
	g.mu.Unlock()
	g.cancel()
	done := make(chan struct{})
	go func() {
		g.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("idgen: segment %q: closed, but its fetch in flight did not end: %w", g.key, ctx.Err())
	}
}
