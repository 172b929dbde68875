package memory

// Broken variants for the areas where bugs once passed the whole TCK: the
// edges of the value range, an owner's own expired term and its last slot
// after a crash, the expiry boundary, a retried Acquire, listing order,
// Waiters, Purge, TryLock's scope, option keys, a lock granted after a
// wait, SeedSlot. Each is one small bug in one method; they are declared in
// brokenVariants (broken_test.go) with the others.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cosid-go/store/driver"
)

// withAcquireBug returns the wrap of an acquireBug variant.
func withAcquireBug(b acquireBug) func(*driverStore) driver.Store {
	return func(s *driverStore) driver.Store { b.driverStore = s; return b }
}

// namespacesByCreation lists namespaces in the order they were created.
type namespacesByCreation struct{ *driverStore }

// creationOrder is namespacesByCreation's record, per state; guarded by
// the state's mutex.
var creationOrder = map[*state]*[]string{}

func (s namespacesByCreation) order() *[]string {
	o := creationOrder[s.st]
	if o == nil {
		o = new([]string)
		creationOrder[s.st] = o
	}
	return o
}

func (s namespacesByCreation) Namespaces(ctx context.Context) ([]driver.Namespace, error) {
	out, err := s.driverStore.Namespaces(ctx)
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	order := s.order()
	for _, ns := range out {
		if !slices.Contains(*order, ns.Name) {
			*order = append(*order, ns.Name)
		}
	}
	slices.SortStableFunc(out, func(a, b driver.Namespace) int {
		return cmp.Compare(slices.Index(*order, a.Name), slices.Index(*order, b.Name))
	})
	return out, err
}

func (s namespacesByCreation) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	s.st.mu.Lock()
	if order := s.order(); !slices.Contains(*order, req.Namespace.Name) {
		*order = append(*order, req.Namespace.Name)
	}
	s.st.mu.Unlock()
	return s.driverStore.Acquire(ctx, req)
}

// purgeForgetsSeals unseals every key and namespace, then purges: the
// contract before purges kept seals, under which an instance still pointed
// at the store handed out the values of a key that had moved away.
type purgeForgetsSeals struct{ *driverStore }

func (s purgeForgetsSeals) Purge(ctx context.Context) ([]string, error) {
	s.st.mu.Lock()
	for _, r := range s.st.ranges {
		r.sealed = false
	}
	for _, ns := range s.st.spaces {
		ns.sealed = false
	}
	s.st.mu.Unlock()
	return s.driverStore.Purge(ctx)
}

// purgeForgetsFloors lowers every released slot's next floor to the clock
// before it purges: a term released without its last used timestamp no
// longer holds the purge off until its ceiling.
type purgeForgetsFloors struct{ *driverStore }

func (s purgeForgetsFloors) Purge(ctx context.Context) ([]string, error) {
	s.st.mu.Lock()
	now := s.st.clock()
	for _, ns := range s.st.spaces {
		for n, r := range ns.slots {
			if r.Owner == "" && r.NextFloor > now {
				r.NextFloor = now
				ns.slots[n] = r
			}
		}
	}
	s.st.mu.Unlock()
	return s.driverStore.Purge(ctx)
}

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

// seedLive seeds a slot with a live term, raising its fence and next floor
// under the holder.
type seedLive struct{ *driverStore }

func (s seedLive) SeedSlot(ctx context.Context, want driver.Namespace, n int, fence, nextFloor int64) error {
	err := s.driverStore.SeedSlot(ctx, want, n, fence, nextFloor)
	if !errors.Is(err, driver.ErrLocked) {
		return err
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	ns := s.st.spaces[want.Name]
	r := ns.slots[n]
	r.Fence, r.NextFloor = max(r.Fence, fence), max(r.NextFloor, nextFloor)
	ns.slots[n] = r
	return nil
}

// seedAnySettings seeds into an existing namespace whatever settings the
// call names.
type seedAnySettings struct{ *driverStore }

func (s seedAnySettings) SeedSlot(ctx context.Context, want driver.Namespace, n int, fence, nextFloor int64) error {
	s.st.mu.Lock()
	if ns := s.st.spaces[want.Name]; ns != nil {
		want.Limit, want.Tolerance = ns.limit, ns.tolerance
	}
	s.st.mu.Unlock()
	return s.driverStore.SeedSlot(ctx, want, n, fence, nextFloor)
}
