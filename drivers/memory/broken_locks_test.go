package memory

// Broken lock variants, with their probes (see broken_store_test.go): bugs
// that show only in the race at a handover are given a window wide enough
// for a probe to see every time.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cosid-go/store/driver"
)

// lockBug is the memory driver's Lock with one of four bugs.
type lockBug struct {
	*driverStore
	gap         bool // a waiter handed the lock claims it a moment later; TryLock takes an unclaimed lock
	dropAtGrant bool // a waiter cancelled as it is handed the lock keeps it, for nobody
	wakeBehind  bool // a waiter leaving the middle of the queue wakes the one behind it
	sorted      bool // waiters queue in owner order, not arrival order
}

// Entry state the variants keep beside the driver's; entries are unique.
var (
	claimed sync.Map // *lockEntry -> true once its Lock returned it
	kicks   sync.Map // *lockEntry -> chan struct{}: closed by a wrong wake-up
)

func (b lockBug) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	if err := b.begin(ctx); err != nil {
		return nil, err
	}
	st := b.st
	q := st.locks[name]
	if q == nil {
		q = &lockQueue{}
		st.locks[name] = q
	}
	if !wait && len(q.entries) > 0 {
		_, taken := claimed.Load(q.entries[0])
		st.mu.Unlock()
		if b.gap && !taken {
			return phantomLock{}, nil // "the holder is gone"
		}
		return nil, fmt.Errorf("held: %w", driver.ErrLocked)
	}
	st.fences++
	e := &lockEntry{name: name, owner: owner, fence: st.fences, store: b.driverStore,
		head: make(chan struct{}), lost: make(chan struct{})}
	kick := make(chan struct{})
	kicks.Store(e, kick)
	pos := len(q.entries)
	for b.sorted && pos > 1 && q.entries[pos-1].owner > owner {
		pos--
	}
	q.entries = slices.Insert(q.entries, pos, e)
	b.entries[e] = struct{}{}
	if len(q.entries) == 1 {
		close(e.head)
	}
	st.mu.Unlock()

	var waitErr error
	select {
	case <-e.head:
		if b.gap {
			time.Sleep(20 * time.Millisecond) // the bug's window: a re-read before claiming (a model, not a wait)
		}
	case <-kick:
	case <-ctx.Done():
		waitErr = ctx.Err()
	case <-b.done:
		waitErr = driver.ErrClosed
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if e.state == lostHold {
		return nil, driver.ErrClosed
	}
	if waitErr != nil {
		if b.dropAtGrant && isClosed(e.head) {
			return nil, waitErr
		}
		i := slices.Index(q.entries, e)
		st.dequeue(e)
		e.state = left
		if b.wakeBehind && i > 0 && i < len(q.entries) {
			if k, ok := kicks.Load(q.entries[i]); ok {
				close(k.(chan struct{}))
			}
		}
		return nil, waitErr
	}
	claimed.Store(e, true)
	return &lock{e: e}, nil
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// lockProbe opens n stores on one fresh state, wrapped, as lockers.
func lockProbe(wrap func(*driverStore) driver.Store, n int) ([]driver.Locker, func()) {
	name := freshName("lock")
	var ls []driver.Locker
	var all []driver.Store
	for range n {
		d := wrap(newDriver(name))
		all = append(all, d)
		ls = append(ls, d.(driver.Locker))
	}
	return ls, func() {
		for _, d := range all {
			d.Close()
		}
	}
}

type lockOut struct {
	l   driver.Lock
	err error
}

func lockAsync(ctx context.Context, k driver.Locker, name, owner string) chan lockOut {
	ch := make(chan lockOut, 1)
	go func() {
		l, err := k.Lock(ctx, name, owner, true)
		ch <- lockOut{l, err}
	}()
	return ch
}

// awaitQueue polls until name's queue has n entries.
func awaitQueue(ctx context.Context, k driver.Locker, name string, n int) error {
	for {
		ws, err := k.Waiters(ctx, name)
		if err == nil && len(ws) == n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("queue of %q never reached %d entries: %w", name, n, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// probeTryLockGap: rounds of unlock-then-TryLock with a waiter queued.
func probeTryLockGap(ctx context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	ks, done := lockProbe(wrap, 3)
	defer done()
	twice := 0
	for range 20 {
		h, err := ks[0].Lock(ctx, "n", "h", true)
		if err != nil {
			return "", err
		}
		ch := lockAsync(ctx, ks[1], "n", "w")
		if err := awaitQueue(ctx, ks[2], "n", 2); err != nil {
			return "", err
		}
		if err := h.Unlock(ctx); err != nil {
			return "", err
		}
		if _, err := ks[2].Lock(ctx, "n", "t", false); err == nil {
			twice++
		}
		w := <-ch
		if w.err != nil {
			return "", w.err
		}
		if err := w.l.Unlock(ctx); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("TryLock at the handover succeeded in some of 20 rounds: %v", twice > 0), nil
}

// probeDropAtGrant: rounds of cancel-then-unlock; does the waiter behind
// get the lock?
func probeDropAtGrant(ctx context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	stuck := 0
	for range 20 {
		ks, done := lockProbe(wrap, 3)
		h, err := ks[0].Lock(ctx, "n", "h", true)
		if err != nil {
			done()
			return "", err
		}
		ctxA, cancelA := context.WithCancel(ctx)
		chA := lockAsync(ctxA, ks[1], "n", "a")
		if err := awaitQueue(ctx, ks[0], "n", 2); err != nil {
			cancelA()
			done()
			return "", err
		}
		chB := lockAsync(ctx, ks[2], "n", "b")
		if err := awaitQueue(ctx, ks[0], "n", 3); err != nil {
			cancelA()
			done()
			return "", err
		}
		cancelA()
		if err := h.Unlock(ctx); err != nil {
			done()
			return "", err
		}
		if a := <-chA; a.err == nil {
			_ = a.l.Unlock(ctx) // a took the lock: fine, pass it on
		}
		select {
		case <-chB:
		case <-time.After(3 * time.Second): // the sound store answers in microseconds
			stuck++
		}
		done() // ends a stuck wait with ErrClosed
		if stuck > 0 {
			break
		}
	}
	return fmt.Sprintf("the waiter behind was stuck in some of 20 rounds: %v", stuck > 0), nil
}

// probeWakeBehind: a middle waiter cancels; does the one behind it return
// while the holder holds?
func probeWakeBehind(ctx context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	ks, done := lockProbe(wrap, 3)
	defer done()
	if _, err := ks[0].Lock(ctx, "n", "h", true); err != nil {
		return "", err
	}
	ctxA, cancelA := context.WithCancel(ctx)
	chA := lockAsync(ctxA, ks[1], "n", "a")
	if err := awaitQueue(ctx, ks[0], "n", 2); err != nil {
		cancelA()
		return "", err
	}
	chB := lockAsync(ctx, ks[2], "n", "b")
	if err := awaitQueue(ctx, ks[0], "n", 3); err != nil {
		cancelA()
		return "", err
	}
	cancelA()
	<-chA
	select {
	case b := <-chB:
		return fmt.Sprintf("the waiter behind returned while the holder held: error %v", b.err), nil
	case <-time.After(200 * time.Millisecond):
		return "the waiter behind kept waiting", nil
	}
}

// probeSorted: waiters w-c then w-a queue behind a holder.
func probeSorted(ctx context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	ks, done := lockProbe(wrap, 3)
	defer done()
	if _, err := ks[0].Lock(ctx, "n", "h", true); err != nil {
		return "", err
	}
	for i, owner := range []string{"w-c", "w-a"} {
		lockAsync(ctx, ks[i+1], "n", owner)
		if err := awaitQueue(ctx, ks[0], "n", i+2); err != nil {
			return "", err
		}
	}
	ws, err := ks[0].Waiters(ctx, "n")
	return fmt.Sprintf("queue: %v", ws), err
}

// unlockLostNil reports success for the Unlock of a hold lost when its
// store closed.
type unlockLostNil struct{ *driverStore }

type lostNilLock struct{ driver.Lock }

func (l lostNilLock) Unlock(ctx context.Context) error {
	if err := l.Lock.Unlock(ctx); !errors.Is(err, driver.ErrLeaseLost) {
		return err
	}
	return nil
}

func (s unlockLostNil) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	l, err := s.driverStore.Lock(ctx, name, owner, wait)
	if err != nil {
		return nil, err
	}
	return lostNilLock{l}, nil
}

func probeUnlockLost(ctx context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	d, _ := probeStore(wrap)
	l, err := d.(driver.Locker).Lock(ctx, "n", "a", false)
	if err != nil {
		return "", err
	}
	if err := d.Close(); err != nil {
		return "", err
	}
	return fmt.Sprintf("Unlock after the store closed: %v", l.Unlock(ctx)), nil
}

// lostAfterGrant's Close hands its locks on first and closes their Lost
// channels a moment later.
type lostAfterGrant struct{ *driverStore }

func (s lostAfterGrant) Close() error {
	s.st.mu.Lock()
	if s.closed {
		s.st.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	var lost []*lockEntry
	for e := range s.entries {
		s.st.dequeue(e)
		e.state = lostHold
		lost = append(lost, e)
	}
	s.st.mu.Unlock()
	time.Sleep(20 * time.Millisecond) // the bug's window (a model, not a wait)
	for _, e := range lost {
		close(e.lost)
	}
	return nil
}

// probeLostAfterGrant: is the closed holder's Lost closed when the waiter
// is granted the lock?
func probeLostAfterGrant(ctx context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	ks, done := lockProbe(wrap, 2)
	defer done()
	l, err := ks[0].Lock(ctx, "n", "a", true)
	if err != nil {
		return "", err
	}
	ch := make(chan bool, 1)
	go func() {
		w, err := ks[1].Lock(ctx, "n", "b", true)
		ch <- err == nil && isClosed(l.Lost())
		if err == nil {
			_ = w.Unlock(ctx) // the probe is done with it
		}
	}()
	if err := awaitQueue(ctx, ks[1], "n", 2); err != nil {
		return "", err
	}
	if err := ks[0].(driver.Store).Close(); err != nil {
		return "", err
	}
	return fmt.Sprintf("Lost closed when the waiter was granted: %v", <-ch), nil
}
