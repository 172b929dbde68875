package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Each operation of a store ends within the store timeout T. A context of
// its own per call (context.WithTimeout) sets a runtime timer per call,
// and setting one wakes another thread to watch it (the runtime's network
// poller): 4.5 µs of a 35 µs MySQL Next on a 2-core machine. Instead the
// calls of a store share deadline contexts, made by context.WithDeadline:
// a call started at t takes the newest one if it ends in [t+T-T/64, t+T],
// else makes one that ends at t+T. So a call still ends by t+T, with at
// least 63/64 of T; a busy store sets one timer per T/64 at most (65
// pending), whatever its rate of calls. The contexts a call sees are the
// standard library's, so their errors, causes and children are those of
// context.WithTimeout.

// deadlines is a store's shared deadline contexts.
type deadlines struct {
	cur atomic.Pointer[shared] // the one ending last
	mu  sync.Mutex             // held to make one
}

// shared is a context of no values that ends at its deadline.
type shared struct {
	ctx    context.Context
	at     time.Time
	cancel context.CancelFunc // never called before at: calls may hold ctx until then
}

// until returns a shared context ending in [at-grain, at], the newest if
// it does.
func (d *deadlines) until(at time.Time, grain time.Duration) context.Context {
	fits := func(sh *shared) bool {
		return sh != nil && !sh.at.After(at) && !sh.at.Before(at.Add(-grain))
	}
	if sh := d.cur.Load(); fits(sh) {
		return sh.ctx
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	cur := d.cur.Load()
	if fits(cur) {
		return cur.ctx
	}
	sh := &shared{at: at}
	sh.ctx, sh.cancel = context.WithDeadline(context.Background(), at)
	if cur == nil || at.After(cur.at) {
		d.cur.Store(sh)
	}
	return sh.ctx
}

// bounded is a caller's context with the deadline and cancellation of a
// shared one. Its values are the caller's, and the standard library's own
// key, which the shared context answers first: a context derived from a
// bounded one registers with the shared one, as with any context of
// package context, without a goroutine.
type bounded struct {
	context.Context                 // shared: Deadline, Done, Err
	values          context.Context // the caller's
}

func (b *bounded) Value(key any) any {
	if v := b.Context.Value(key); v != nil {
		return v
	}
	return b.values.Value(key)
}

// bound returns ctx bounded by the store timeout from now, and the
// function that releases what it holds, as context.WithTimeout would: a
// caller's deadline that comes first is kept as it is, and a caller's
// context that can end still ends the call with its own error.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	at := time.Now().Add(s.timeout)
	if d, ok := ctx.Deadline(); ok && !d.After(at) {
		return ctx, func() {}
	}
	sh := s.bounds.until(at, s.timeout/64)
	if ctx == context.Background() || ctx == context.TODO() {
		// No values, no end: the shared context is all the call needs.
		return sh, func() {}
	}
	b := &bounded{Context: sh, values: ctx}
	if ctx.Done() == nil {
		return b, func() {}
	}
	c, cancel := context.WithCancelCause(b)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	if ctx.Err() != nil {
		cancel(context.Cause(ctx)) // ended already: at once, not on AfterFunc's goroutine
	}
	return c, func() {
		stop()
		cancel(context.Canceled)
	}
}
