package tck_test

// Broken lock variants over the memory driver (see broken_fault_test.go):
// each reimplements one method over the driver's interfaces, keeping what
// it must beside the state (a seal of its own, the holders it saw, its
// store's holds). The handover races are in broken_fault_handover_test.go.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/memfault"
)

func init() {
	variants = append(variants,
		faulty("seal-grants-queued", "Locks/Seal",
			func(d memDriver, sh *shared) driver.Store { return sealGrantsQueued{d, sharedOf[doorSeal](sh)} }, nil),
		faulty("purge-unseals-locks", "Locks/Seal",
			func(d memDriver, _ *shared) driver.Store { return purgeUnseals{d} }, nil),
		faulty("double-lock", "Locks/TryLock",
			func(d memDriver, _ *shared) driver.Store { return doubleLock{d} }, nil),
		faulty("stale-unlock", "Locks/UnlockTwice",
			func(d memDriver, sh *shared) driver.Store { return staleUnlock{d, sharedOf[holders](sh)} }, nil),
		faulty("unlock-lost-nil", "Locks/UnlockAfterLost",
			func(d memDriver, _ *shared) driver.Store { return unlockLostNil{d} }, probeUnlockLost),
		faulty("lost-after-grant", "Locks/LostBeforeGrant",
			func(d memDriver, _ *shared) driver.Store { return &lostAfterGrant{memDriver: d} }, probeLostAfterGrant),
		faulty("purge-own-locks", "Purge/Locked",
			func(d memDriver, _ *shared) driver.Store { return &purgeOwnLocks{memDriver: d} }, nil),
		faulty("trylock-any-name", "Locks/TryLock",
			func(d memDriver, _ *shared) driver.Store { return tryLockAnyName{d} }, nil),
		faulty("granted-not-owned", "Locks/LostOnClose",
			func(d memDriver, sh *shared) driver.Store { return &grantedNotOwned{memDriver: d, state: sh.name} }, nil),
	)
}

// sealGrantsQueued seals locks only at the door: a Lock after SealLocks is
// refused, but a waiter queued before is still granted the lock once the
// holder unlocks, so an instance left on a store migrated out of holds a
// lock beside the new store's holder.
type sealGrantsQueued struct {
	memDriver
	door *doorSeal
}

// doorSeal is sealGrantsQueued's seal of one state.
type doorSeal struct {
	mu     sync.Mutex
	sealed bool
}

func (d *doorSeal) isSealed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sealed
}

func (s sealGrantsQueued) SealLocks(ctx context.Context) (int64, error) {
	var fence int64
	err := memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
		fence = st.LockFence()
		s.door.mu.Lock()
		s.door.sealed = true
		s.door.mu.Unlock()
		return nil
	})
	return fence, err
}

func (s sealGrantsQueued) LocksSealed(context.Context) (bool, error) { return s.door.isSealed(), nil }

func (s sealGrantsQueued) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	if s.door.isSealed() {
		return nil, fmt.Errorf("lock %q: sealed: %w", name, driver.ErrSealed)
	}
	return s.memDriver.Lock(ctx, name, owner, wait)
}

// purgeUnseals forgets the locks' seal in a purge: an instance left on a
// store migrated out of, and purged since, locks beside the new store's
// holders.
type purgeUnseals struct{ memDriver }

func (s purgeUnseals) Purge(ctx context.Context) ([]string, error) {
	deleted, err := s.memDriver.Purge(ctx)
	if err == nil {
		err = s.RaiseLockFences(ctx, 0)
	}
	return deleted, err
}

// doubleLock lets TryLock of a held lock "succeed" with a lock nobody
// checks.
type doubleLock struct{ memDriver }

type phantomLock struct{}

func (phantomLock) Unlock(context.Context) error { return nil }
func (phantomLock) Fence() int64                 { return 1 }
func (phantomLock) Lost() <-chan struct{}        { return nil }

func (s doubleLock) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	l, err := s.memDriver.Lock(ctx, name, owner, wait)
	if !wait && errors.Is(err, driver.ErrLocked) {
		return phantomLock{}, nil
	}
	return l, err
}

// staleUnlock's second Unlock removes whoever holds the lock by then, as
// an unlock that deletes "the" holder node rather than its own would.
type staleUnlock struct {
	memDriver
	holders *holders
}

// holders is staleUnlock's record of one state: each lock name's last
// holder, as granted.
type holders struct {
	mu sync.Mutex
	m  map[string]driver.Lock
}

type staleLock struct {
	driver.Lock
	holders  *holders
	name     string
	mu       sync.Mutex
	unlocked bool
}

func (s staleUnlock) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	l, err := s.memDriver.Lock(ctx, name, owner, wait)
	if err != nil {
		return nil, err
	}
	s.holders.mu.Lock()
	defer s.holders.mu.Unlock()
	if s.holders.m == nil {
		s.holders.m = map[string]driver.Lock{}
	}
	s.holders.m[name] = l
	return &staleLock{Lock: l, holders: s.holders, name: name}, nil
}

func (l *staleLock) Unlock(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.unlocked {
		l.unlocked = true
		return l.Lock.Unlock(ctx)
	}
	l.holders.mu.Lock()
	holder := l.holders.m[l.name]
	l.holders.mu.Unlock()
	if holder != nil {
		_ = holder.Unlock(ctx) // the bug: another's hold ends
	}
	return nil
}

// unlockLostNil reports success for the Unlock of a hold lost when its
// store closed.
type unlockLostNil struct{ memDriver }

type lostNilLock struct{ driver.Lock }

func (l lostNilLock) Unlock(ctx context.Context) error {
	if err := l.Lock.Unlock(ctx); !errors.Is(err, driver.ErrLeaseLost) {
		return err
	}
	return nil
}

func (s unlockLostNil) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	l, err := s.memDriver.Lock(ctx, name, owner, wait)
	if err != nil {
		return nil, err
	}
	return lostNilLock{l}, nil
}

// lostAfterGrant's Close hands its locks on first and closes their Lost
// channels a moment later.
type lostAfterGrant struct {
	memDriver
	mu   sync.Mutex
	held map[*lateLost]bool
}

// lateLost is a hold of lostAfterGrant, with a Lost channel of its own.
type lateLost struct {
	driver.Lock
	s    *lostAfterGrant
	lost chan struct{}
}

func (l *lateLost) Lost() <-chan struct{} { return l.lost }

func (l *lateLost) Unlock(ctx context.Context) error {
	l.s.mu.Lock()
	delete(l.s.held, l)
	l.s.mu.Unlock()
	return l.Lock.Unlock(ctx)
}

func (s *lostAfterGrant) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	l, err := s.memDriver.Lock(ctx, name, owner, wait)
	if err != nil {
		return nil, err
	}
	ll := &lateLost{Lock: l, s: s, lost: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = map[*lateLost]bool{}
	}
	s.held[ll] = true
	return ll, nil
}

func (s *lostAfterGrant) Close() error {
	err := s.memDriver.Close()        // hands the locks on
	time.Sleep(20 * time.Millisecond) // the bug's window (a model, not a wait)
	s.mu.Lock()
	defer s.mu.Unlock()
	for l := range s.held {
		close(l.lost)
	}
	clear(s.held)
	return err
}

// purgeOwnLocks counts only the locks of other stores as in use: the
// purging store's own holds are dropped with everything else.
type purgeOwnLocks struct {
	memDriver
	mu  sync.Mutex
	own map[driver.Lock]bool
}

// ownLock is a hold of purgeOwnLocks.
type ownLock struct {
	driver.Lock
	s *purgeOwnLocks
}

func (l ownLock) Unlock(ctx context.Context) error {
	l.s.mu.Lock()
	delete(l.s.own, l.Lock)
	l.s.mu.Unlock()
	return l.Lock.Unlock(ctx)
}

func (s *purgeOwnLocks) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	l, err := s.memDriver.Lock(ctx, name, owner, wait)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.own == nil {
		s.own = map[driver.Lock]bool{}
	}
	s.own[l] = true
	return ownLock{l, s}, nil
}

func (s *purgeOwnLocks) Purge(ctx context.Context) ([]string, error) {
	s.mu.Lock()
	for l := range s.own {
		_ = l.Unlock(ctx) // the bug: its own hold leaves, unknown to its holder
	}
	clear(s.own)
	s.mu.Unlock()
	return s.memDriver.Purge(ctx)
}

// tryLockAnyName refuses a TryLock while any lock of the state is in use.
type tryLockAnyName struct{ memDriver }

func (s tryLockAnyName) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	if !wait {
		names, err := s.Locks(ctx)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if ws, err := s.Waiters(ctx, n); err == nil && len(ws) > 0 {
				return nil, fmt.Errorf("lock %q is held: %w", n, driver.ErrLocked)
			}
		}
	}
	return s.memDriver.Lock(ctx, name, owner, wait)
}

// grantedNotOwned forgets a hold it was granted after a wait: it waits
// through another store of the state, which it never closes, so its own
// Close neither ends the hold nor passes the lock on.
type grantedNotOwned struct {
	memDriver
	state string
	mu    sync.Mutex
	other memDriver
}

func (s *grantedNotOwned) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	if ws, err := s.Waiters(ctx, name); !wait || err != nil || len(ws) == 0 {
		return s.memDriver.Lock(ctx, name, owner, wait)
	}
	s.mu.Lock()
	if s.other == nil {
		d, err := openMemory(map[string]string{"name": s.state})
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		s.other = d.(memDriver)
	}
	other := s.other
	s.mu.Unlock()
	return other.Lock(ctx, name, owner, true)
}
