package memory

// Broken variants for the areas where bugs once passed the whole TCK: the
// edges of the value range, an owner's own expired term and its last slot
// after a crash, the expiry boundary, a retried Acquire, listing order,
// Waiters, Purge, TryLock's scope, option keys, a lock granted after a
// wait, SeedSlot. Each is one small bug in one method; they are declared in
// brokenVariants (broken_test.go) with the others.

import (
	"context"
	"fmt"
	"slices"

	"github.com/cosid-go/store/driver"
)

// purgeOwnLocks counts only the locks of other stores as in use: the
// purging store's own holds and waits are dropped with everything else.
type purgeOwnLocks struct{ *driverStore }

func (s purgeOwnLocks) Purge(ctx context.Context) ([]string, error) {
	s.st.mu.Lock()
	var own []*lockEntry
	for _, q := range s.st.locks {
		for _, e := range q.entries {
			if e.store == s.driverStore {
				own = append(own, e)
			}
		}
	}
	for _, e := range own {
		q := s.st.locks[e.name]
		q.entries = slices.DeleteFunc(q.entries, func(x *lockEntry) bool { return x == e })
	}
	s.st.mu.Unlock()
	return s.driverStore.Purge(ctx)
}

// tryLockAnyName refuses a TryLock while any lock of the state is in use.
type tryLockAnyName struct{ *driverStore }

func (s tryLockAnyName) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	if !wait {
		s.st.mu.Lock()
		busy := false
		for _, q := range s.st.locks {
			busy = busy || len(q.entries) > 0
		}
		s.st.mu.Unlock()
		if busy {
			return nil, fmt.Errorf("a lock is held: %w", driver.ErrLocked)
		}
	}
	return s.driverStore.Lock(ctx, name, owner, wait)
}

// grantedNotOwned forgets a hold it was granted after a wait: its store's
// Close then neither ends it nor passes the lock on.
type grantedNotOwned struct{ *driverStore }

func (s grantedNotOwned) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	s.st.mu.Lock()
	waits := s.st.locks[name] != nil && len(s.st.locks[name].entries) > 0
	s.st.mu.Unlock()
	k, err := s.driverStore.Lock(ctx, name, owner, wait)
	if err != nil || !waits {
		return k, err
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	delete(s.entries, k.(*lock).e) // granted after a wait: no longer tracked
	return k, nil
}
