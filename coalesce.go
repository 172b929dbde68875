package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/cosid-go/store/driver"
)

// WithCoalescing turns the coalescing of Next on or off (default on).
//
// With it, calls of one store on one key that arrive while a write of that
// key is in flight wait for the next write, which reserves the sum of their
// steps in one driver call and splits it among them in arrival order: many
// callers of one key cost one write per round trip instead of one each.
// Every caller still gets exactly its step; a write whose outcome is
// unknown skips the whole batch; a caller whose context ends before the
// write leaves the batch, and one whose context ends during it returns at
// once, its share skipped (a gap, never handed out). Each call is still
// bounded by the store timeout, its wait included.
//
// Turn it off when every call must be a write of its own.
func WithCoalescing(on bool) Option {
	return func(s *Store) error {
		s.single = !on
		return nil
	}
}

// coalescer batches the Next calls of one store per key.
type coalescer struct {
	bounds *deadlines // the store's (deadline.go)

	mu sync.Mutex
	// keys holds each key with a write in flight, and the batch waiting
	// for the next write (nil while nobody waits).
	keys   map[string]*batch
	closed bool           // the store is closing: no write starts
	wg     sync.WaitGroup // batch writers
}

// batch is the callers waiting for one write of a key, in arrival order.
type batch struct {
	ctx     context.Context // the first caller's: the write carries its values
	waiters []*waiter
	live    int                // waiters that have not left
	writing bool               // the write started: leaving no longer changes it
	cancel  context.CancelFunc // ends the write; called once every waiter left
}

// waiter is one call of Next in a batch.
type waiter struct {
	step     int64
	deadline time.Time // zero: none
	done     chan struct{}
	r        Range // set, with err, before done is closed
	err      error
	panic    any  // the driver panicked in its write: the call panics too
	left     bool // its context ended first: it gets nothing
}

// next is Next through the coalescer: with no write of key in flight it
// writes at once, on the caller's goroutine and context; otherwise it joins
// the batch for the next write.
func (c *coalescer) next(ctx context.Context, d driver.RangeStore, key string, step int64) (Range, error) {
	c.mu.Lock()
	b, busy := c.keys[key]
	if !busy {
		if c.keys == nil {
			c.keys = map[string]*batch{}
		}
		c.keys[key] = nil
		c.mu.Unlock()
		// Deferred: a driver that panics must not leave the key busy.
		defer c.written(d, key)
		return nextRange(ctx, d, key, step)
	}
	if b == nil {
		b = &batch{ctx: ctx}
		c.keys[key] = b
	}
	w := &waiter{step: step, done: make(chan struct{})}
	w.deadline, _ = ctx.Deadline()
	b.waiters = append(b.waiters, w)
	b.live++
	c.mu.Unlock()

	select {
	case <-w.done:
		return w.result()
	case <-ctx.Done():
	}
	c.mu.Lock()
	select {
	case <-w.done: // answered as the context ended: the range is the caller's
		c.mu.Unlock()
		return w.result()
	default:
	}
	defer c.mu.Unlock()
	w.left = true
	b.live--
	if b.writing && b.live == 0 {
		b.cancel() // nobody is left to take the range
	}
	return Range{}, fmt.Errorf("waiting for a write shared with other calls of the key: %w", ctx.Err())
}

// result is what the write gave w, once done is closed.
func (w *waiter) result() (Range, error) {
	if w.panic != nil {
		panic(w.panic) // on the caller's goroutine, as a write of its own would
	}
	return w.r, w.err
}

// written ends a write of key on a caller's goroutine: the batch that
// gathered meanwhile, if any, is written on a goroutine of its own, so the
// caller returns at once.
func (c *coalescer) written(d driver.RangeStore, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.keys[key]
	switch {
	case b == nil:
		delete(c.keys, key)
	case c.closed:
		delete(c.keys, key)
		for _, w := range b.waiters {
			if !w.left {
				w.err = ErrClosed
				close(w.done)
			}
		}
	default:
		c.wg.Add(1)
		go c.write(d, key, b)
	}
}

// write writes b, then each batch that gathered meanwhile, until none did.
func (c *coalescer) write(d driver.RangeStore, key string, b *batch) {
	defer c.wg.Done()
	for b != nil {
		c.mu.Lock()
		c.keys[key] = nil // later callers gather in the next batch
		var ws []*waiter
		var deadline time.Time // the last of the waiters', zero if one has none
		endless := false
		for _, w := range b.waiters {
			if w.left {
				continue
			}
			endless = endless || w.deadline.IsZero()
			if w.deadline.After(deadline) {
				deadline = w.deadline
			}
			ws = append(ws, w)
		}
		// The write outlives any one caller: it ends when the last
		// deadline passes or when every caller has left. That deadline is
		// most often one of the store's shared ones (deadline.go): no
		// timer of its own.
		var base context.Context = context.WithoutCancel(b.ctx) // its values, for tracing
		if !endless {
			base = &bounded{Context: c.bounds.until(deadline, 0), values: base}
		}
		ctx, cancel := context.WithCancel(base)
		b.cancel, b.writing = cancel, true
		closed := c.closed
		c.mu.Unlock()

		res := make([]result, len(ws))
		var panicked any
		switch {
		case len(ws) == 0:
		case closed:
			for i := range res {
				res[i].err = ErrClosed
			}
		default:
			res, panicked = c.splitRecovered(ctx, d, key, ws)
		}
		cancel()

		c.mu.Lock()
		taken := false
		for i, w := range ws {
			if !w.left {
				w.r, w.err, w.panic = res[i].r, res[i].err, panicked
				taken = true
				close(w.done)
			}
		}
		if b = c.keys[key]; b == nil {
			delete(c.keys, key)
		}
		c.mu.Unlock()
		if panicked != nil && !taken {
			panic(panicked) // nobody is left to take it: as unrecovered on a caller's goroutine
		}
	}
}

// splitRecovered is split, returning what the driver panicked with, if it
// did, for the waiting calls to panic with on their own goroutines: a
// panic on this goroutine would end the process, or, recovered, leave the
// key busy for good.
func (c *coalescer) splitRecovered(ctx context.Context, d driver.RangeStore, key string, ws []*waiter) (res []result, panicked any) {
	defer func() {
		if p := recover(); p != nil {
			res, panicked = make([]result, len(ws)), p
		}
	}()
	return c.split(ctx, d, key, ws), nil
}

type result struct {
	r   Range
	err error
}

// split reserves the steps of ws with one write and splits the range in
// arrival order. When that write is refused as exhausted, or the steps'
// sum does not fit in an int64, some calls may still fit: the steps are
// then written one at a time, in arrival order, as separate calls would.
func (c *coalescer) split(ctx context.Context, d driver.RangeStore, key string, ws []*waiter) []result {
	res := make([]result, len(ws))
	sum, fits := int64(0), true
	for _, w := range ws {
		if w.step > math.MaxInt64-sum {
			fits = false
			break
		}
		sum += w.step
	}
	if fits {
		r, err := nextRange(ctx, d, key, sum)
		if err == nil {
			start := r.Start
			for i, w := range ws {
				res[i].r = Range{Start: start, End: start + w.step}
				start += w.step
			}
			return res
		}
		if len(ws) == 1 || !errors.Is(err, ErrExhausted) {
			for i := range res {
				res[i].err = err
			}
			return res
		}
	}
	// Near the end of the int64 range: the key's next value only grows, so
	// a step refused as exhausted refuses every step as large after it.
	refused := int64(0) // the smallest step refused, 0 for none yet
	for i, w := range ws {
		c.mu.Lock()
		left := w.left
		c.mu.Unlock()
		switch {
		case left:
			// It left before its write: nothing is reserved for it.
		case refused > 0 && w.step >= refused:
			res[i].err = fmt.Errorf("a step of %d did not fit before it, so its step of %d does not: %w",
				refused, w.step, ErrExhausted)
		default:
			res[i].r, res[i].err = nextRange(ctx, d, key, w.step)
			if errors.Is(res[i].err, ErrExhausted) {
				refused = w.step
			}
		}
	}
	return res
}

// nextRange is one driver write of step values of key.
func nextRange(ctx context.Context, d driver.RangeStore, key string, step int64) (Range, error) {
	start, err := d.Next(ctx, key, step)
	if err != nil {
		return Range{}, err
	}
	if start < 0 || start > math.MaxInt64-step {
		// A driver bug must not become a duplicate downstream.
		return Range{}, driverBug("range start %d with step %d", start, step)
	}
	return Range{Start: start, End: start + step}, nil
}

// close makes batches that have not started fail with ErrClosed.
func (c *coalescer) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}

// wait waits for the batch writers; called after the driver closed.
func (c *coalescer) wait() { c.wg.Wait() }
