package memory

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/cosid-go/store/driver"
)

// lockQueue is one lock name: its holder (first) and waiters, in arrival
// order. It is kept when empty, so Locks lists every name ever used.
type lockQueue struct {
	entries []*lockEntry
}

// lockEntry is one waiter or the holder: the ZooKeeper driver's sequential
// node. Its fields other than the channels are guarded by state.mu.
type lockEntry struct {
	name  string
	owner string
	fence int64
	store *driverStore
	head  chan struct{} // closed when the entry reaches the head of its queue
	// sealed is the locks' seal as the entry was queued: once closed, the
	// entry is never granted, even after RaiseLockFences replaced it.
	sealed chan struct{}
	lost   chan struct{} // closed when the store closes
	state  entryState
}

type entryState int

const (
	queued   entryState = iota // waiting or holding
	left                       // unlocked, or gave up waiting
	lostHold                   // removed by Close
)

func (e *lockEntry) lose() {
	e.state = lostHold
	close(e.lost)
}

// dequeue removes e from its queue and, if e was the head, hands the lock
// to the next entry. Removing an entry that is not in the queue does
// nothing.
func (st *state) dequeue(e *lockEntry) {
	delete(e.store.entries, e)
	q := st.locks[e.name]
	i := slices.Index(q.entries, e)
	if i < 0 {
		return
	}
	q.entries = slices.Delete(q.entries, i, i+1)
	if i == 0 && len(q.entries) > 0 && !st.sealed() && !closed(q.entries[0].sealed) {
		// Only the new head wakes: no herd. One queued before a seal
		// (undone since) is not granted: it leaves, handing on.
		close(q.entries[0].head)
	}
}

// Lock joins the queue of name and waits (if wait) until it is at its head.
func (s *driverStore) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	if s.st.sealed() {
		s.st.mu.Unlock()
		return nil, fmt.Errorf("lock %q: the store's locks are sealed: %w", name, driver.ErrSealed)
	}
	q := s.st.locks[name]
	if q == nil {
		q = &lockQueue{}
		s.st.locks[name] = q
	}
	if !wait && len(q.entries) > 0 {
		holder := q.entries[0]
		s.st.mu.Unlock()
		return nil, fmt.Errorf("held by %s with fence %d: %w", holder.owner, holder.fence, driver.ErrLocked)
	}
	s.st.fences++
	e := &lockEntry{
		name:   name,
		owner:  owner,
		fence:  s.st.fences,
		store:  s,
		head:   make(chan struct{}),
		sealed: s.st.locksSealed,
		lost:   make(chan struct{}),
	}
	q.entries = append(q.entries, e)
	s.entries[e] = struct{}{}
	if len(q.entries) == 1 {
		close(e.head)
	}
	sealed := e.sealed // RaiseLockFences may replace the store's
	s.st.mu.Unlock()

	var waitErr error
	select {
	case <-e.head:
	case <-ctx.Done():
		waitErr = ctx.Err()
	case <-s.done:
		waitErr = driver.ErrClosed
	case <-sealed:
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if e.state == lostHold {
		// Close removed the entry, maybe just as it reached the head.
		return nil, driver.ErrClosed
	}
	if waitErr == nil && !closed(e.head) {
		// Sealed while queued: after the seal no entry reaches the head
		// (dequeue hands nothing on), so this one was never granted.
		s.st.dequeue(e)
		e.state = left
		return nil, fmt.Errorf("lock %q: the store's locks were sealed while it waited: %w", name, driver.ErrSealed)
	}
	if waitErr != nil {
		// Leave no trace; if the lock was handed over meanwhile, pass it on.
		s.st.dequeue(e)
		e.state = left
		return nil, waitErr
	}
	return &lock{e: e}, nil
}

// Locks lists every lock name ever used, sorted.
func (s *driverStore) Locks(ctx context.Context) ([]string, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.st.mu.Unlock()
	names := make([]string, 0, len(s.st.locks))
	for name := range s.st.locks {
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}

// Waiters lists the holder and the waiters of name, in queue order. A name
// never used gives ErrNotFound.
func (s *driverStore) Waiters(ctx context.Context, name string) ([]driver.Waiter, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.st.mu.Unlock()
	q := s.st.locks[name]
	if q == nil {
		return nil, fmt.Errorf("no lock %q: %w", name, driver.ErrNotFound)
	}
	out := make([]driver.Waiter, 0, len(q.entries))
	for _, e := range q.entries {
		out = append(out, driver.Waiter{Owner: e.owner, Fence: e.fence})
	}
	return out, nil
}

// lock is a held lock.
type lock struct{ e *lockEntry }

func (l *lock) Fence() int64          { return l.e.fence }
func (l *lock) Lost() <-chan struct{} { return l.e.lost }

// Unlock removes only this hold. It works whatever ctx says: releasing is
// never harmful, and a hold left behind would block everyone.
func (l *lock) Unlock(context.Context) error {
	st := l.e.store.st
	st.mu.Lock()
	defer st.mu.Unlock()
	switch l.e.state {
	case lostHold:
		l.e.state = left // the loss is reported once; a second call returns nil
		return fmt.Errorf("store closed while held: %w", driver.ErrLeaseLost)
	case left:
		return nil
	}
	st.dequeue(l.e)
	l.e.state = left
	return nil
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (st *state) sealed() bool { return closed(st.locksSealed) }

// SealLocks seals every lock name (driver.LockSealer). The fence counter
// is store-wide, so it is the floor of every name.
func (s *driverStore) SealLocks(ctx context.Context) (int64, error) {
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	defer s.st.mu.Unlock()
	if !s.st.sealed() {
		close(s.st.locksSealed)
	}
	return s.st.fences, nil
}

// RaiseLockFences raises the store-wide fence counter to floor, and
// unseals the locks. A waiter queued before, not granted yet, would
// otherwise be granted its fence at or below floor after the raise: each
// queue's waiters from the first such one on take new fences, in queue
// order, so they still grow along the queue.
func (s *driverStore) RaiseLockFences(ctx context.Context, floor int64) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.st.mu.Unlock()
	s.st.fences = max(s.st.fences, floor)
	for _, q := range s.st.locks {
		renumber := false
		for _, e := range q.entries {
			if closed(e.head) {
				continue // the holder keeps its fence
			}
			renumber = renumber || e.fence <= floor
			if renumber {
				s.st.fences++
				e.fence = s.st.fences
			}
		}
	}
	if s.st.sealed() {
		s.st.locksSealed = make(chan struct{})
	}
	return nil
}

// LocksSealed reports whether SealLocks ran.
func (s *driverStore) LocksSealed(ctx context.Context) (bool, error) {
	if err := s.begin(ctx); err != nil {
		return false, err
	}
	defer s.st.mu.Unlock()
	return s.st.sealed(), nil
}
