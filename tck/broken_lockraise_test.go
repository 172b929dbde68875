package tck_test

// The variants of Locks/RaiseQueued: the memory driver, sound, and memory
// stores wrapped with a fence offset of their own that a Lock reads when
// it queues, as the ZooKeeper, PostgreSQL and MySQL drivers fixed a
// waiter's fence at enqueue: a waiter queued before RaiseLockFences is
// granted a fence at or below its floor.

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/tck"
)

func init() {
	variants = append(variants,
		variant{name: "raise-queued-memory", checks: []string{"Locks/RaiseQueued"}, suite: offsetAtEnqueueSuite(false)},
		variant{name: "raise-offset-at-enqueue", checks: []string{"Locks/RaiseQueued"}, broken: true, suite: offsetAtEnqueueSuite(true)},
		variant{name: "raise-twice-memory", checks: []string{"Locks/RaiseTwiceQueued"}, suite: offsetAtEnqueueSuite(false)},
		variant{name: "raise-twice-offset-at-enqueue", checks: []string{"Locks/RaiseTwiceQueued"}, broken: true, suite: offsetAtEnqueueSuite(true)},
		// The same variant passes Locks/RaiseFences: only a waiter queued
		// before the raise shows the hole.
		variant{name: "raise-offset-at-enqueue-no-queue", checks: []string{"Locks/RaiseFences"}, suite: offsetAtEnqueueSuite(true)},
		// A waiter renumbered by the first raise it waited through, and
		// not by a later one: one raise (Locks/RaiseQueued) cannot tell.
		variant{name: "raise-first-kept", checks: []string{"Locks/RaiseTwiceQueued"}, broken: true, suite: firstRaiseKeptSuite()},
		variant{name: "raise-first-kept-one-raise", checks: []string{"Locks/RaiseQueued"}, suite: firstRaiseKeptSuite()},
	)
}

// offsetAtEnqueueSuite is the memory driver's locks; broken, wrapped by
// offsetStore.
func offsetAtEnqueueSuite(broken bool) func(*testing.T) tck.Suite {
	wrap := func(h memHarness) tck.Harness { return h }
	if broken {
		wrap = func(h memHarness) tck.Harness { return &offsetHarness{memHarness: h} }
	}
	return locksOnly(harnessSuite(wrap))
}

// firstRaiseKeptSuite is offsetStore granting a waiter the offset of the
// first raise after it queued (firstRaise).
func firstRaiseKeptSuite() func(*testing.T) tck.Suite {
	return locksOnly(harnessSuite(func(h memHarness) tck.Harness { return &offsetHarness{memHarness: h, firstRaise: true} }))
}

// offsetHarness keeps the fence offset its stores share; with firstRaise,
// the offset after each raise too.
type offsetHarness struct {
	memHarness
	firstRaise bool
	mu         sync.Mutex
	offset     int64
	raised     []int64 // the offset after each RaiseLockFences, with firstRaise
}

// grantOffset is the offset of a Lock that read offset and the number of
// raises queued when it queued: that offset, or with firstRaise the
// offset after the first raise since.
func (h *offsetHarness) grantOffset(offset int64, queued int) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.firstRaise && len(h.raised) > queued {
		return h.raised[queued]
	}
	return offset
}

func (h *offsetHarness) queued() (offset int64, raises int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.offset, len(h.raised)
}

func (h *offsetHarness) NewStore(ctx context.Context) (driver.Store, error) {
	return h.wrapped(ctx, func(d memDriver) driver.Store { return &offsetStore{Store: d, Locker: d, inner: d, h: h} })
}

func (h *offsetHarness) current() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.offset
}

// offsetStore's fences are the memory driver's plus the offset the Lock
// read as it queued; RaiseLockFences raises the offset only.
type offsetStore struct {
	driver.Store
	driver.Locker
	inner driver.LockSealer
	h     *offsetHarness
}

func (s *offsetStore) Close() error { return s.Store.Close() }

func (s *offsetStore) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	off, raises := s.h.queued()
	l, err := s.Locker.Lock(ctx, name, owner, wait)
	if err != nil {
		return nil, err
	}
	return offsetLock{Lock: l, off: s.h.grantOffset(off, raises)}, nil
}

func (s *offsetStore) Waiters(ctx context.Context, name string) ([]driver.Waiter, error) {
	ws, err := s.Locker.Waiters(ctx, name)
	off := s.h.current()
	for i := range ws {
		ws[i].Fence += off
	}
	return ws, err
}

func (s *offsetStore) SealLocks(ctx context.Context) (int64, error) {
	floor, err := s.inner.SealLocks(ctx)
	return floor + s.h.current(), err
}

func (s *offsetStore) RaiseLockFences(ctx context.Context, floor int64) error {
	if floor < 0 || floor == math.MaxInt64 {
		return fmt.Errorf("fence floor %d: %w", floor, driver.ErrInvalidArgument)
	}
	if err := s.inner.RaiseLockFences(ctx, 0); err != nil { // unseals
		return err
	}
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	s.h.offset = max(s.h.offset, floor)
	if s.h.firstRaise {
		s.h.raised = append(s.h.raised, s.h.offset)
	}
	return nil
}

func (s *offsetStore) LocksSealed(ctx context.Context) (bool, error) { return s.inner.LocksSealed(ctx) }

type offsetLock struct {
	driver.Lock
	off int64
}

func (l offsetLock) Fence() int64 { return l.Lock.Fence() + l.off }
