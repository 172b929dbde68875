package tck_test

// The variants of Locks/SealRaiseQueued: the memory driver, sound, and
// memory stores wrapped with a seal of their own that a waiter looks at
// only when it is granted, as the etcd, ZooKeeper and PostgreSQL drivers
// did: a seal and a raise between two looks go unseen.

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/tck"
)

func init() {
	checks := []string{"Locks/Seal", "Locks/SealRaiseQueued"}
	variants = append(variants,
		variant{name: "seal-raise-memory", checks: checks, suite: lookSealSuite(false)},
		variant{name: "seal-looked-at-grant", checks: []string{"Locks/SealRaiseQueued"}, broken: true, suite: lookSealSuite(true)},
		// The same variant passes Locks/Seal: only the raise hides the seal.
		variant{name: "seal-looked-at-grant-no-raise", checks: []string{"Locks/Seal"}, suite: lookSealSuite(true)},
	)
}

// lookSealSuite is the memory driver's locks; broken, wrapped by
// lookSealStore.
func lookSealSuite(broken bool) func(*testing.T) tck.Suite {
	wrap := func(h memHarness) tck.Harness { return h }
	if broken {
		wrap = func(h memHarness) tck.Harness { return &lookSealHarness{memHarness: h} }
	}
	return locksOnly(harnessSuite(wrap))
}

// lookSealHarness keeps the seal its stores share.
type lookSealHarness struct {
	memHarness
	mu     sync.Mutex
	sealed bool
	floor  int64 // the highest floor SealLocks gave
}

func (h *lookSealHarness) NewStore(ctx context.Context) (driver.Store, error) {
	return h.wrapped(ctx, func(d memDriver) driver.Store { return &lookSealStore{Store: d, Locker: d, inner: d, h: h} })
}

func (h *lookSealHarness) isSealed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sealed
}

// lookSealStore refuses a Lock while sealed, and a waiter if the locks
// are sealed when it is granted; RaiseLockFences unseals. The memory
// driver underneath is never sealed.
type lookSealStore struct {
	driver.Store
	driver.Locker
	inner driver.LockSealer
	h     *lookSealHarness
}

func (s *lookSealStore) Close() error { return s.Store.Close() }

func (s *lookSealStore) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	if s.h.isSealed() {
		return nil, fmt.Errorf("lock %q: sealed: %w", name, driver.ErrSealed)
	}
	l, err := s.Locker.Lock(ctx, name, owner, wait)
	if err == nil && s.h.isSealed() {
		l.Unlock(ctx)
		return nil, fmt.Errorf("lock %q: sealed while it waited: %w", name, driver.ErrSealed)
	}
	return l, err
}

// SealLocks gives the highest fence queued, or given before, as the floor
// (the memory driver's counter is store-wide: no higher fence was handed
// out).
func (s *lookSealStore) SealLocks(ctx context.Context) (int64, error) {
	s.h.mu.Lock()
	s.h.sealed = true
	s.h.mu.Unlock()
	names, err := s.Locker.Locks(ctx)
	if err != nil {
		return 0, err
	}
	var floor int64
	for _, n := range names {
		ws, err := s.Locker.Waiters(ctx, n)
		if err != nil {
			continue // forgotten meanwhile
		}
		for _, w := range ws {
			floor = max(floor, w.Fence)
		}
	}
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	s.h.floor = max(s.h.floor, floor)
	return s.h.floor, nil
}

func (s *lookSealStore) RaiseLockFences(ctx context.Context, floor int64) error {
	if err := s.inner.RaiseLockFences(ctx, floor); err != nil {
		return err
	}
	s.h.mu.Lock()
	s.h.sealed = false
	s.h.mu.Unlock()
	return nil
}

func (s *lookSealStore) LocksSealed(context.Context) (bool, error) { return s.h.isSealed(), nil }
