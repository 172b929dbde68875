package tck_test

// Broken lock variants for the races at a handover and the queue's order
// (see broken_fault_test.go): each reimplements Lock over the memory
// driver's interfaces with one bug, the stores of a state sharing what the
// bug needs. A bug that shows only in a narrow window is given one wide
// enough for its probe (broken_fault_lockprobes_test.go) to see it.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cosid-go/store/driver"
)

func init() {
	variants = append(variants,
		faulty("trylock-gap", "Locks/TryLockAtHandover",
			func(d memDriver, sh *shared) driver.Store { return tryLockGap{d, sharedOf[handovers](sh)} }, probeTryLockGap),
		faulty("drop-at-grant", "Locks/CancelAtGrant",
			func(d memDriver, _ *shared) driver.Store { return dropAtGrant{d} }, probeDropAtGrant),
		faulty("wake-behind", "Locks/MiddleCancel",
			func(d memDriver, sh *shared) driver.Store { return wakeBehind{d, sharedOf[kicks](sh)} }, probeWakeBehind),
		faulty("sorted-queue", "Locks/FIFOArrival",
			func(d memDriver, sh *shared) driver.Store { return sortedQueue{d, sharedOf[ownerQueues](sh)} }, probeSorted),
	)
}

// tryLockGap: a waiter handed the lock claims it a moment later, and a
// TryLock meanwhile takes the unclaimed lock: two holders.
type tryLockGap struct {
	memDriver
	h *handovers
}

// handovers counts, per lock name, the handovers not yet claimed.
type handovers struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *handovers) add(name string, d int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[string]int{}
	}
	h.n[name] = max(0, h.n[name]+d)
}

func (h *handovers) pending(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[name] > 0
}

type gapLock struct {
	driver.Lock
	s    tryLockGap
	name string
}

func (l gapLock) Unlock(ctx context.Context) error {
	if ws, err := l.s.Waiters(ctx, l.name); err == nil && len(ws) > 1 {
		l.s.h.add(l.name, 1) // the next waiter is handed the lock
	}
	return l.Lock.Unlock(ctx)
}

func (s tryLockGap) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	l, err := s.memDriver.Lock(ctx, name, owner, wait)
	if !wait && errors.Is(err, driver.ErrLocked) && s.h.pending(name) {
		return phantomLock{}, nil // "the holder is gone"
	}
	if err != nil {
		return nil, err
	}
	if wait && s.h.pending(name) {
		time.Sleep(20 * time.Millisecond) // the bug's window: a re-read before claiming (a model, not a wait)
		s.h.add(name, -1)
	}
	return gapLock{l, s, name}, nil
}

// detachedWait is the memory driver's waiting Lock run on a context of
// its own, so that a variant decides what its caller's leaving does.
type detachedWait struct {
	cancel func()
	ch     <-chan lockResult
}

func waitDetached(ctx context.Context, d memDriver, name, owner string) detachedWait {
	inner, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return detachedWait{cancel, lockAsync(inner, d, name, owner)}
}

// leave ends the wait as the memory driver does: a lock granted as the
// caller left is kept.
func (w detachedWait) leave(ctx context.Context) (driver.Lock, error) {
	w.cancel()
	if r := <-w.ch; r.err == nil {
		return r.l, nil
	}
	return nil, ctx.Err()
}

// dropAtGrant: a waiter whose context ends as it is handed the lock
// returns the context's error and keeps the lock, for nobody.
type dropAtGrant struct{ memDriver }

func (s dropAtGrant) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	if !wait {
		return s.memDriver.Lock(ctx, name, owner, wait)
	}
	w := waitDetached(ctx, s.memDriver, name, owner)
	select {
	case r := <-w.ch:
		w.cancel()
		return r.l, r.err
	case <-ctx.Done():
	}
	ws, err := s.Waiters(context.WithoutCancel(ctx), name)
	if err == nil && len(ws) > 0 && ws[0].Owner == owner {
		// The bug: handed the lock, the wait goes on to take it, for nobody.
		go func() { <-w.ch; w.cancel() }()
		return nil, ctx.Err()
	}
	return w.leave(ctx)
}

// wakeBehind: a waiter leaving the middle of the queue wakes the one
// behind it, which takes the lock it never reached.
type wakeBehind struct {
	memDriver
	k *kicks
}

// kicks holds the wake-up of each waiter of a state, by lock name and owner.
type kicks struct {
	mu sync.Mutex
	m  map[[2]string]chan struct{}
}

func (k *kicks) set(name, owner string, ch chan struct{}) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[[2]string]chan struct{}{}
	}
	if ch == nil {
		delete(k.m, [2]string{name, owner})
	} else {
		k.m[[2]string{name, owner}] = ch
	}
}

func (k *kicks) kick(name, owner string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ch := k.m[[2]string{name, owner}]; ch != nil {
		close(ch)
		delete(k.m, [2]string{name, owner})
	}
}

type lockResult struct {
	l   driver.Lock
	err error
}

// wokenLock is the hold of a waiter woken too early: its wait goes on
// underneath, and ends at Unlock.
type wokenLock struct {
	cancel func()
	wait   <-chan lockResult
}

func (l wokenLock) Fence() int64          { return 0 }
func (l wokenLock) Lost() <-chan struct{} { return nil }
func (l wokenLock) Unlock(ctx context.Context) error {
	l.cancel()
	if r := <-l.wait; r.err == nil {
		return r.l.Unlock(ctx)
	}
	return nil
}

func (s wakeBehind) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	if !wait {
		return s.memDriver.Lock(ctx, name, owner, wait)
	}
	kick := make(chan struct{})
	s.k.set(name, owner, kick)
	defer s.k.set(name, owner, nil)
	w := waitDetached(ctx, s.memDriver, name, owner)
	select {
	case r := <-w.ch:
		w.cancel()
		return r.l, r.err
	case <-kick:
		return wokenLock{w.cancel, w.ch}, nil
	case <-ctx.Done():
	}
	// Leaving the queue: the bug wakes the waiter behind.
	if ws, err := s.Waiters(context.WithoutCancel(ctx), name); err == nil {
		i := slices.IndexFunc(ws, func(x driver.Waiter) bool { return x.Owner == owner })
		if i > 0 && i+1 < len(ws) {
			s.k.kick(name, ws[i+1].Owner)
		}
	}
	return w.leave(ctx)
}

// sortedQueue: waiters queue in owner order, not arrival order. The queue
// is its own, per state: its head tries the memory driver's lock at each
// Unlock. (A holder's store closing wakes nobody: the checks it is run
// under unlock.)
type sortedQueue struct {
	memDriver
	q *ownerQueues
}

// ownerQueues is sortedQueue's queues of a state, by lock name.
type ownerQueues struct {
	mu sync.Mutex
	m  map[string][]*sortedWaiter
}

type sortedWaiter struct {
	owner string
	turn  chan struct{} // closed to make the head try the lock again
}

// next wakes the head of name's queue; the caller holds q.mu.
func (q *ownerQueues) next(name string) {
	if ws := q.m[name]; len(ws) > 0 && !isClosed(ws[0].turn) {
		close(ws[0].turn)
	}
}

// leave takes w out of name's queue, waking the next head.
func (q *ownerQueues) leave(name string, w *sortedWaiter) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.m[name] = slices.DeleteFunc(q.m[name], func(x *sortedWaiter) bool { return x == w })
	q.next(name)
}

type sortedLock struct {
	driver.Lock
	q    *ownerQueues
	name string
}

func (l sortedLock) Unlock(ctx context.Context) error {
	err := l.Lock.Unlock(ctx)
	l.q.mu.Lock()
	defer l.q.mu.Unlock()
	l.q.next(l.name)
	return err
}

func (s sortedQueue) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	s.q.mu.Lock()
	queued := len(s.q.m[name]) > 0
	s.q.mu.Unlock()
	if queued && !wait {
		return nil, fmt.Errorf("waited for: %w", driver.ErrLocked)
	}
	if !queued {
		l, err := s.memDriver.Lock(ctx, name, owner, false)
		if err == nil {
			return sortedLock{l, s.q, name}, nil
		}
		if !wait || !errors.Is(err, driver.ErrLocked) {
			return nil, err
		}
	}
	w := &sortedWaiter{owner: owner}
	s.q.mu.Lock()
	if s.q.m == nil {
		s.q.m = map[string][]*sortedWaiter{}
	}
	ws := s.q.m[name]
	i, _ := slices.BinarySearchFunc(ws, owner, func(x *sortedWaiter, o string) int { return cmp.Compare(x.owner, o) })
	s.q.m[name] = slices.Insert(ws, i, w)
	s.q.mu.Unlock()
	for {
		// Armed before the try, so that an Unlock after it wakes this wait.
		s.q.mu.Lock()
		head := s.q.m[name][0] == w
		turn := make(chan struct{})
		w.turn = turn
		s.q.mu.Unlock()
		if head {
			l, err := s.memDriver.Lock(ctx, name, owner, false)
			if err == nil {
				s.q.mu.Lock()
				s.q.m[name] = slices.DeleteFunc(s.q.m[name], func(x *sortedWaiter) bool { return x == w })
				s.q.mu.Unlock()
				return sortedLock{l, s.q, name}, nil
			}
			if !errors.Is(err, driver.ErrLocked) {
				s.q.leave(name, w)
				return nil, err
			}
		}
		select {
		case <-turn:
		case <-ctx.Done():
			s.q.leave(name, w)
			return nil, ctx.Err()
		}
	}
}

// Waiters lists the holder, then sortedQueue's queue.
func (s sortedQueue) Waiters(ctx context.Context, name string) ([]driver.Waiter, error) {
	ws, err := s.memDriver.Waiters(ctx, name)
	if err != nil {
		return nil, err
	}
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	for _, w := range s.q.m[name] {
		ws = append(ws, driver.Waiter{Owner: w.owner})
	}
	return ws, nil
}
