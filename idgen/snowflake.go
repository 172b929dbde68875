package idgen

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/cosid-go/store"
)

// Defaults of SnowflakeOptions.
const (
	DefaultMaxAhead = time.Second
	DefaultMaxWait  = time.Second
)

// SnowflakeOptions tune NewSnowflake. The zero value is the default.
type SnowflakeOptions struct {
	Layout  Layout               // zero fields take defaults, see Layout.Resolve
	Acquire store.AcquireOptions // ttl, preferred slot, reclaim of the slot
	Margin  time.Duration        // the session's, see SessionOptions

	// Clock is the wall clock the timestamps come from, also compared with
	// the lease's ExpiresAt (nil: time.Now); replace it in tests. Whatever
	// it says, the lease's validity is also measured on the real monotonic
	// clock.
	Clock func() time.Time

	// MaxAhead is how far timestamps may run ahead of the clock when a
	// unit's sequence is used up, or the clock is a little behind the last
	// timestamp (a small step back) or the lease's floor. Never past the
	// lease's ceiling. Zero: DefaultMaxAhead; negative: never ahead (wait
	// for the clock instead).
	MaxAhead time.Duration

	// MaxWait bounds how long one NextID waits for the clock to catch up or
	// for a renewal to raise the ceiling; past it NextID returns
	// ErrClockBackwards or ErrCeiling. A wait for the clock to come back to
	// the last timestamp issued that is known to be longer fails at once;
	// a wait for the lease's floor (left by the slot's previous term, for
	// instance the old ceiling after a reclaim) is waited for up to
	// MaxWait. Zero: DefaultMaxWait; negative: never wait.
	MaxWait time.Duration
}

// Snowflake issues 63-bit IDs of timestamp, worker ID and sequence (see
// Layout). The worker ID is the slot of a lease held by a Session, and the
// generator issues only while the session says the lease is valid, and only
// timestamps whose whole unit lies in the lease's [Floor, Ceiling): two
// holders of one slot, even overlapping after a pause, never share a
// timestamp, so their IDs never collide.
//
// NextID reads the clock, checks the lease, and advances the last ID issued
// with one compare-and-swap: no lock. A Snowflake is safe for concurrent
// use. Close it to release the slot with the highest timestamp used, so
// that its next holder starts right above.
type Snowflake struct {
	sess     *Session
	layout   Layout
	clock    func() time.Time
	real     bool  // clock is time.Now: its readings carry the monotonic clock
	epoch    int64 // ms
	unit     int64 // ms
	seqMax   int64
	tsLimit  int64 // timestamps stay below
	maxAhead int64 // units
	maxWait  time.Duration
	worker   int

	// last is the last ID issued, none before the first, or closed after
	// Close: every issue and Close is a compare-and-swap on it, so no ID is
	// issued after Close read the highest timestamp used.
	last     atomic.Int64
	bounds   atomic.Pointer[bounds]
	closedCh chan struct{}

	waits  [waitKinds]atomic.Int64 // NextID calls that waited, by what for
	issued atomic.Int64            // IDs handed out
}

const (
	none   = -1 // last before the first ID
	closed = -2 // last after Close
)

// bounds are a term's timestamps, in units: lo <= t < hi.
type bounds struct {
	term   *term
	lo, hi int64
}

// NewSnowflake acquires a slot of ns for owner, keeps it alive with a
// Session, and returns a generator using the slot as worker ID. The
// layout's worker bits must hold every slot of ns.
//
// A namespace keeps the layout of its first generator (Layout.String,
// through store.SlotLeaseStore.KeepLayout; a namespace made before
// layouts were kept takes the next generator's): a generator of another
// layout (unit, epoch or bit widths), whose IDs could equal earlier ones,
// is refused with store.ErrConfigMismatch naming the difference, before it
// acquires a slot. To change the layout, use a new namespace. A store
// whose driver cannot keep layouts (store.ErrUnsupported) is not checked.
func NewSnowflake(ctx context.Context, st *store.Store, ns store.Namespace, owner string, opts SnowflakeOptions) (*Snowflake, error) {
	layout, err := opts.Layout.Resolve(ns.Limit)
	if err != nil {
		return nil, err
	}
	g := &Snowflake{
		layout:   layout,
		clock:    opts.Clock,
		epoch:    layout.Epoch.UnixMilli(),
		unit:     layout.Unit.Milliseconds(),
		seqMax:   1<<layout.SequenceBits - 1,
		tsLimit:  1 << layout.TimestampBits,
		maxWait:  opts.MaxWait,
		closedCh: make(chan struct{}),
	}
	g.last.Store(none)
	if g.clock == nil {
		g.clock, g.real = time.Now, true
	}
	switch {
	case opts.MaxAhead == 0:
		g.maxAhead = DefaultMaxAhead.Milliseconds() / g.unit
	case opts.MaxAhead > 0:
		g.maxAhead = opts.MaxAhead.Milliseconds() / g.unit
	}
	switch {
	case g.maxWait == 0:
		g.maxWait = DefaultMaxWait
	case g.maxWait < 0:
		g.maxWait = 0
	}
	if g.maxWait > 0 && g.maxWait < layout.Unit {
		return nil, invalid("snowflake max wait %v is shorter than the unit %v", g.maxWait, layout.Unit)
	}
	if now := g.clock(); now.Before(layout.Epoch) {
		return nil, invalid("layout epoch %s is after the clock's time %s", layout.Epoch.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if err := keepLayout(ctx, st, ns, layout); err != nil {
		return nil, err
	}
	sess, err := NewSession(ctx, st, ns, owner, SessionOptions{Acquire: opts.Acquire, Margin: opts.Margin})
	if err != nil {
		return nil, err
	}
	g.sess = sess
	g.worker = sess.Lease().Slot
	return g, nil
}

// Session returns the session holding the generator's lease.
func (g *Snowflake) Session() *Session { return g.sess }

// Layout returns the resolved layout, for decoding IDs.
func (g *Snowflake) Layout() Layout { return g.layout }

// Worker returns the worker ID (the slot).
func (g *Snowflake) Worker() int { return g.worker }

// NextID returns a new ID. It fails with an error wrapping ErrLeaseLost as
// soon as the lease cannot be trusted, and with ErrClosed after Close. When
// the clock is behind (see SnowflakeOptions.MaxAhead) it waits, within
// MaxWait and ctx, then fails with ErrClockBackwards; at the lease's ceiling
// it waits for a renewal, then fails with ErrCeiling.
func (g *Snowflake) NextID(ctx context.Context) (int64, error) {
	var deadline time.Time // of the waits of this call, on the monotonic clock
	var floor time.Time    // when this call began to wait for the floor
	for {
		id, w, err := g.next()
		if w == nil {
			if !floor.IsZero() {
				g.reportWait(time.Since(floor))
			}
			return id, err
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(g.maxWait)
			g.waits[w.kind].Add(1)
			if w.kind == floorWait {
				floor = time.Now()
			}
		}
		if err := g.wait(ctx, w, deadline); err != nil {
			if !floor.IsZero() {
				g.reportWait(time.Since(floor))
			}
			return 0, err
		}
	}
}

// pause is what NextID must wait for before it can issue.
type pause struct {
	kind    waitKind
	clock   time.Duration // until the clock is far enough on; 0: see renewal
	renewal <-chan struct{}
	err     error // to return when the wait is over its bound
}

// waitKind says what a NextID call waits for.
type waitKind int

const (
	clockWait   waitKind = iota // the clock to pass the last timestamp issued
	floorWait                   // the clock to reach the lease's floor
	ceilingWait                 // a renewal, at the lease's ceiling
	waitKinds
)

// next issues an ID, or says what to wait for.
func (g *Snowflake) next() (int64, *pause, error) {
	if g.last.Load() == closed {
		return 0, nil, ErrClosed
	}
	now := g.clock()
	mono := now
	if !g.real {
		mono = time.Now()
	}
	nowMs := now.UnixMilli()
	t, err := g.sess.check(mono, nowMs)
	if err != nil {
		return 0, nil, err
	}
	b := g.bounds.Load()
	if b == nil || b.term != t {
		// A unit may be issued only if all of its milliseconds lie in
		// [Floor, Ceiling), whatever unit the slot's other holders use.
		b = &bounds{
			term: t,
			lo:   max(0, ceilDiv(t.lease.Floor-g.epoch, g.unit)),
			hi:   floorDiv(t.lease.Ceiling-g.epoch, g.unit),
		}
		g.bounds.Store(b)
	}
	c := floorDiv(nowMs-g.epoch, g.unit) // the clock's unit
	for {
		last := g.last.Load()
		if last == closed {
			return 0, nil, ErrClosed
		}
		ts, seq := max(c, b.lo), int64(0)
		floor := b.lo > c // what a clock wait would wait for
		if last != none {
			lastTs, _, lastSeq := g.layout.Decode(last)
			if lastTs >= ts {
				ts, seq, floor = lastTs, lastSeq+1, false
				if seq > g.seqMax {
					ts, seq = lastTs+1, 0
				}
			}
		}
		switch {
		case ts >= g.tsLimit:
			return 0, nil, fmt.Errorf("%w: timestamp %d needs more than %d bits (the layout ends at %s)",
				ErrTimestampOverflow, ts, g.layout.TimestampBits, g.layout.Time(g.tsLimit).UTC().Format(time.RFC3339))
		case ts >= b.hi:
			return 0, &pause{kind: ceilingWait, renewal: t.changed, err: fmt.Errorf("%w: timestamp %d ms would reach the ceiling %d ms (clock at %d ms)",
				ErrCeiling, g.epoch+ts*g.unit, t.lease.Ceiling, nowMs)}, nil
		case ts-c > g.maxAhead:
			until := time.UnixMilli(g.epoch + (ts-g.maxAhead)*g.unit).Sub(now)
			kind := clockWait
			if floor {
				kind = floorWait
			}
			return 0, &pause{kind: kind, clock: max(until, time.Nanosecond), err: g.behind(last, b.lo, ts, c, nowMs)}, nil
		}
		id := g.layout.encode(ts, g.worker, seq)
		if g.last.CompareAndSwap(last, id) {
			g.issued.Add(1)
			return id, nil, nil
		}
		// Another caller issued meanwhile: go on from its ID.
	}
}

// SnowflakeStats counts a Snowflake's waits and its lease's renewals, for
// metrics and tests.
type SnowflakeStats struct {
	ClockWaits   int64 // NextID calls that waited for the clock to pass the last timestamp issued
	FloorWaits   int64 // NextID calls that waited for the clock to reach the lease's floor
	CeilingWaits int64 // NextID calls that waited for a renewal at the lease's ceiling
	Renewals     int64 // lease renewals that succeeded
	Issued       int64 // IDs handed out
	Worker       int   // the worker ID: the lease's slot
	Fence        int64 // the lease's fence
	// LeaseLeft is how long the session still trusts the lease without a
	// further renewal; 0 once the session ended.
	LeaseLeft time.Duration
}

// Stats returns the generator's counters.
func (g *Snowflake) Stats() SnowflakeStats {
	st := SnowflakeStats{
		ClockWaits:   g.waits[clockWait].Load(),
		FloorWaits:   g.waits[floorWait].Load(),
		CeilingWaits: g.waits[ceilingWait].Load(),
		Renewals:     g.sess.renewals.Load(),
		Issued:       g.issued.Load(),
		Worker:       g.worker,
		Fence:        g.sess.Lease().Fence,
	}
	if t := g.sess.live.Load(); t != nil {
		st.LeaseLeft = max(time.Until(t.validUntil), 0)
	}
	return st
}

// behind explains a clock wait that ran over its bound.
func (g *Snowflake) behind(last, lo, ts, c, nowMs int64) error {
	if last != none {
		if lastTs, _, _ := g.layout.Decode(last); lastTs > c {
			return fmt.Errorf("%w: the clock (%d ms) is %d ms behind the last timestamp issued (%d ms)",
				ErrClockBackwards, nowMs, g.epoch+lastTs*g.unit-nowMs, g.epoch+lastTs*g.unit)
		}
	}
	if lo > c {
		return fmt.Errorf("%w: the clock (%d ms) is %d ms below the lease's floor (%d ms): the slot's previous term may have issued timestamps up to there; NextID waits for the floor at most MaxWait (%v)",
			ErrClockBackwards, nowMs, g.epoch+lo*g.unit-nowMs, g.epoch+lo*g.unit, g.maxWait)
	}
	return fmt.Errorf("%w: the clock (%d ms) did not reach the next unit (%d ms)",
		ErrClockBackwards, nowMs, g.epoch+ts*g.unit)
}

// spinBelow: shorter clock waits spin instead of sleeping, since a sleep
// may overshoot by a millisecond or more and a generator at its rate limit
// would lose that much of each unit.
const (
	spinBelow = time.Millisecond
	pollEvery = 10 * time.Millisecond // a sleeping wait looks at the clock again at least this often
)

// wait waits as p says, within deadline; it returns the error to give the
// caller, or nil to try again. A clock wait known to outlast the deadline
// fails at once, except one for the floor: that wait always ends (the
// clock only has to move on), so a caller that calls again at once would
// only spin on errors.
func (g *Snowflake) wait(ctx context.Context, p *pause, deadline time.Time) error {
	left := time.Until(deadline)
	if left <= 0 || (p.renewal == nil && p.kind != floorWait && p.clock > left) {
		return p.err
	}
	if p.clock > 0 && p.clock <= spinBelow {
		runtime.Gosched()
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("idgen: NextID: %w while waiting: %v", err, p.err)
		}
		return nil
	}
	d := left
	if p.renewal == nil {
		d = min(p.clock-spinBelow, pollEvery, left)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("idgen: NextID: %w while waiting: %v", ctx.Err(), p.err)
	case <-g.closedCh:
	case <-g.sess.Done():
	case <-p.renewal: // nil for clock waits: never ready
	case <-timer.C:
	}
	return nil
}

// Close stops issuing (NextID returns ErrClosed from now on), then closes
// the session, releasing the slot with the highest timestamp used, or
// without one if it issued nothing. Closing twice returns nil.
func (g *Snowflake) Close(ctx context.Context) error {
	var last int64
	for {
		last = g.last.Load()
		if last == closed {
			return nil
		}
		if g.last.CompareAndSwap(last, closed) {
			break
		}
	}
	close(g.closedCh)
	if last == none {
		// Nothing issued: the next holder may start at this term's floor,
		// not at its ceiling.
		return g.sess.CloseUsed(ctx, max(g.sess.Lease().Floor-1, 0))
	}
	ts, _, _ := g.layout.Decode(last)
	return g.sess.CloseUsed(ctx, g.epoch+(ts+1)*g.unit-1) // the last millisecond of the last unit
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }
