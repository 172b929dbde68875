package tck_test

// The lock variants among the wrappers over the memory driver
// (broken_wrappers_test.go declares them all).

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cosid-go/store/driver"
)

// lockFence gives every lock holder fence 1.
type lockFence struct{ memDriver }

type fixedFence struct{ driver.Lock }

func (fixedFence) Fence() int64 { return 1 }

func (s lockFence) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	l, err := s.memDriver.Lock(ctx, name, owner, wait)
	if err != nil {
		return nil, err
	}
	return fixedFence{l}, nil
}

// spinLock waits by retrying TryLock: no queue, so no order.
type spinLock struct{ memDriver }

func (s spinLock) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	for {
		l, err := s.memDriver.Lock(ctx, name, owner, false)
		if !wait || !errors.Is(err, driver.ErrLocked) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// cancelTrace returns when the caller's context ends but leaves its wait
// queued, to take the lock later for nobody.
type cancelTrace struct{ memDriver }

func (s cancelTrace) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	if !wait {
		return s.memDriver.Lock(ctx, name, owner, wait)
	}
	type result struct {
		l   driver.Lock
		err error
	}
	ch := make(chan result, 1)
	go func() {
		l, err := s.memDriver.Lock(context.WithoutCancel(ctx), name, owner, true)
		ch <- result{l, err}
	}()
	select {
	case r := <-ch:
		return r.l, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// reentrant gives a store's second Lock of a name it holds at once.
type reentrant struct {
	memDriver
	mu   sync.Mutex
	held map[string]int
}

type reentrantLock struct {
	driver.Lock
	r    *reentrant
	name string
	once sync.Once
}

func (l *reentrantLock) Unlock(ctx context.Context) error {
	l.once.Do(func() {
		l.r.mu.Lock()
		defer l.r.mu.Unlock()
		l.r.held[l.name]--
	})
	if l.Lock == nil {
		return nil // the reentered hold has nothing to release
	}
	return l.Lock.Unlock(ctx)
}

func (l *reentrantLock) Fence() int64 {
	if l.Lock == nil {
		return 1
	}
	return l.Lock.Fence()
}

func (l *reentrantLock) Lost() <-chan struct{} {
	if l.Lock == nil {
		return nil
	}
	return l.Lock.Lost()
}

func (r *reentrant) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	r.mu.Lock()
	if r.held == nil {
		r.held = map[string]int{}
	}
	if wait && r.held[name] > 0 {
		r.held[name]++
		r.mu.Unlock()
		return &reentrantLock{r: r, name: name}, nil
	}
	r.mu.Unlock()
	l, err := r.memDriver.Lock(ctx, name, owner, wait)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.held[name]++
	r.mu.Unlock()
	return &reentrantLock{Lock: l, r: r, name: name}, nil
}

// forgetClose does not close: holds stay, waits go on.
type forgetClose struct{ memDriver }

func (forgetClose) Close() error { return nil }

// waitersNoHolder lists only the waiters, leaving the holder out.
type waitersNoHolder struct{ memDriver }

func (s waitersNoHolder) Waiters(ctx context.Context, name string) ([]driver.Waiter, error) {
	out, err := s.memDriver.Waiters(ctx, name)
	if len(out) > 0 {
		out = out[1:]
	}
	return out, err
}

// waitersFenceUnset lists the waiters with fence 0: only a holder's fence
// is known.
type waitersFenceUnset struct{ memDriver }

func (s waitersFenceUnset) Waiters(ctx context.Context, name string) ([]driver.Waiter, error) {
	out, err := s.memDriver.Waiters(ctx, name)
	for i := 1; i < len(out); i++ {
		out[i].Fence = 0
	}
	return out, err
}
