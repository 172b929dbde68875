package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// monoBase anchors the monotonic times stored as integers (the lock's
// deadlines use lockNow, lock_clock.go).
var monoBase = time.Now()

func monoNow() time.Duration { return time.Since(monoBase) }

// call runs fn, one blocking go-zookeeper call, so that the caller returns
// as soon as ctx ends or g stops waiting: go-zookeeper's calls take no
// context. fn then goes on alone until go-zookeeper answers, which it always
// does (a reply, a connection loss, or the connection closing), and delivers
// into a buffered channel nobody reads. Close waits for it.
//
// When call returns a context error or ErrClosed, fn may still be running:
// a write's outcome is then unknown, and fn must not share memory with the
// caller beyond what it returns.
func call[T any](ctx context.Context, g callGroup, fn func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	start := monoNow()
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	if !g.goCall(func() {
		v, err := fn()
		ch <- result{v, err}
	}) {
		return zero, driver.ErrClosed
	}
	var stall <-chan time.Time // see session.stalled
	st, watch := g.(interface{ stalled() time.Duration })
	var timer *time.Timer
	if watch {
		timer = time.NewTimer(stallQuiet)
		defer timer.Stop()
		stall = timer.C
	}
	for {
		select {
		case r := <-ch:
			return r.v, r.err
		case <-ctx.Done():
			return zero, g.ctxErr(ctx.Err(), start)
		case <-g.callEnd():
			return zero, driver.ErrClosed
		case <-stall:
			if again := st.stalled(); again > 0 {
				timer.Reset(again)
			} else {
				stall = nil
			}
		}
	}
}

// callGroup is who a call's goroutine belongs to. Most calls are the
// session's: Close makes them return at once, and a context that ends
// says whether any server answered. A lock node's removal is the lock
// cleanup's (lockSession): it goes on through Close, which waits for it,
// until its own context ends.
type callGroup interface {
	// goCall runs fn on a goroutine Close waits for, or returns false
	// if the group is closed.
	goCall(fn func()) bool
	// callEnd is closed when waiting calls must return ErrClosed; nil
	// for never.
	callEnd() <-chan struct{}
	// ctxErr is what a call begun at start returns when ctx ended with err.
	ctxErr(err error, start time.Duration) error
}

func (s *session) goCall(fn func()) bool {
	if !s.enter() {
		return false
	}
	go func() {
		defer s.calls.Done()
		fn()
	}()
	return true
}

func (s *session) callEnd() <-chan struct{} { return s.closing }

func (s *session) ctxErr(err error, start time.Duration) error {
	return s.unavailable(err, start) // says so when no server answered
}

// enter counts a call goroutine in, unless the store is closed.
func (s *session) enter() bool {
	s.callsMu.RLock()
	defer s.callsMu.RUnlock()
	if s.closed {
		return false
	}
	s.calls.Add(1)
	return true
}

// retryPolicy is the exponential backoff of the retry.* options.
type retryPolicy struct {
	base, maxSleep time.Duration
	maxRetries     int
}

// sleep is the pause before retry n (from 0): base*2^n, at most maxSleep.
func (p retryPolicy) sleep(n int) time.Duration {
	d := p.base
	for i := 0; i < n && d < p.maxSleep; i++ {
		d *= 2
	}
	return min(d, p.maxSleep)
}

// attempts counts the retries of one operation.
type attempts struct {
	s       *session
	n       int
	unknown error // set by a create whose outcome is unknown, for Next's report
}

// retry decides what follows the failure err of a ZooKeeper call: it returns
// nil after sleeping when the call should be tried again, or the error to
// return. Only transient failures (connection loss and the like) are
// retried, at most retry.maxRetries times per operation, within ctx.
func (a *attempts) retry(ctx context.Context, err error) error {
	if !retryable(err) {
		return err
	}
	p := a.s.retry
	if a.n >= p.maxRetries {
		// Only connection failures are retried: no server answered.
		return fmt.Errorf("zookeeper: gave up after %d retries: %w (%w)", a.n, err, driver.ErrUnavailable)
	}
	timer := time.NewTimer(p.sleep(a.n))
	defer timer.Stop()
	a.n++
	driver.Retried(ctx, a.s.report, a.n, err)
	start := monoNow()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w (while retrying after: %v)", a.s.unavailable(ctx.Err(), start), err)
	case <-a.s.closing:
		return driver.ErrClosed
	}
}

// retryable reports a failure worth another try: anything but a context
// error, the store or connection closing, or an answer of the server.
func retryable(err error) bool {
	switch {
	case err == nil, definite(err),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, driver.ErrClosed), errors.Is(err, zk.ErrClosing):
		return false
	}
	return true
}

// definite reports an error that is the server's answer to the request, so
// a write that failed with it was not applied. Every other error (connection
// closed, session expired or moved, no server, a network error, an error
// code go-zookeeper does not name) leaves a write's outcome unknown.
func definite(err error) bool {
	for _, e := range []error{
		zk.ErrNoNode, zk.ErrNodeExists, zk.ErrBadVersion, zk.ErrNotEmpty,
		zk.ErrNoAuth, zk.ErrAuthFailed, zk.ErrInvalidACL, zk.ErrNoChildrenForEphemerals,
		zk.ErrAPIError, zk.ErrBadArguments, zk.ErrInvalidPath, zk.ErrInvalidFlags,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
