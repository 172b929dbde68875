package store

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cosid-go/store/driver"
)

// Waiter is one holder or waiter of a lock (for tools).
type Waiter struct {
	Owner string // the owner key of the store that holds or waits
	Fence int64  // the fence it holds or will hold
}

func waiterOf(w driver.Waiter) Waiter { return Waiter(w) }

// Locker gives fair, exclusive locks by name; their rules are
// [driver.Locker]'s and its methods'.
type Locker struct{ s *Store }

// Lock waits until the lock name is held or ctx ends, by the rules of
// [driver.Locker.Lock]; the store timeout does not bound the wait. The lock outlives
// ctx: it is held until Unlock, or until Lost is closed.
func (l *Locker) Lock(ctx context.Context, name string) (*Lock, error) {
	return l.lock(ctx, name, true)
}

// TryLock takes the lock name if nobody holds or waits for it, and otherwise
// returns ErrLocked at once.
func (l *Locker) TryLock(ctx context.Context, name string) (*Lock, error) {
	return l.lock(ctx, name, false)
}

func (l *Locker) lock(ctx context.Context, name string, wait bool) (*Lock, error) {
	o := op{name: "TryLock", key: name, check: checkName("lock name", name), wait: wait}
	if wait {
		o.name = "Lock"
	}
	return call(ctx, l.s, o, func(ctx context.Context, d driver.Locker) (*Lock, error) {
		dl, err := d.Lock(ctx, name, l.s.owner, wait)
		if err != nil {
			return nil, err
		}
		k := &Lock{s: l.s, name: name, l: dl, done: make(chan struct{})}
		if l.s.observed() {
			l.s.Report(Event{Kind: LockAcquired, Key: name, Fence: dl.Fence()})
			l.s.watches.Add(1)
			go k.watch()
		}
		return k, nil
	})
}

// watch reports a hold lost before Unlock. Close waits for it; the driver
// closes Lost when the store closes.
func (k *Lock) watch() {
	defer k.s.watches.Done()
	select {
	case <-k.done:
	case <-k.l.Lost():
		err := ErrLeaseLost
		if k.s.isClosed() {
			err = ErrClosed
		} else if c, ok := k.l.(driver.LostCause); ok && c.LostErr() != nil {
			if err = c.LostErr(); !errors.Is(err, ErrLeaseLost) {
				err = fmt.Errorf("%w: %w", ErrLeaseLost, err)
			}
		}
		k.ended(LockLost, err)
	}
}

// ended reports the end of the hold, once: Unlock and the watcher race.
func (k *Lock) ended(kind EventKind, err error) {
	k.endOnce.Do(func() {
		k.s.Report(Event{Kind: kind, Key: k.name, Fence: k.l.Fence(), Err: err})
	})
}

// List lists every lock name held or waited on in the store, and the names
// taken before that the driver keeps (a driver may forget unused names).
//
// It holds them all: many names are better read with All. A driver that
// lists in pages (driver.LockLister) is read a page per call, each within
// the store timeout.
func (l *Locker) List(ctx context.Context) ([]string, error) {
	if _, ok := l.s.drv.(driver.LockLister); ok {
		names := []string{}
		for n, err := range l.All(ctx) {
			if err != nil {
				return []string{}, err
			}
			names = append(names, n)
		}
		return names, nil
	}
	out, err := call(ctx, l.s, op{name: "Locks"}, func(ctx context.Context, d driver.Locker) ([]string, error) {
		return d.Locks(ctx)
	})
	return nonNil(out), err
}

// Waiters lists the holder and the waiters of lock name, the holder first.
func (l *Locker) Waiters(ctx context.Context, name string) ([]Waiter, error) {
	o := op{name: "Waiters", key: name, check: checkName("lock name", name)}
	return call(ctx, l.s, o, func(ctx context.Context, d driver.Locker) ([]Waiter, error) {
		ws, err := d.Waiters(ctx, name)
		return convert(ws, waiterOf), err
	})
}

// Lock is a held lock.
type Lock struct {
	s    *Store
	name string
	l    driver.Lock

	mu       sync.Mutex
	unlocked bool
	done     chan struct{} // closed when Unlock is done with the hold
	endOnce  sync.Once
}

// Name returns the lock's name.
func (k *Lock) Name() string { return k.name }

// Fence returns the lock's fencing token ([driver.Lock.Fence] says how it
// grows). Pass it to the resource the lock protects.
func (k *Lock) Fence() int64 { return k.l.Fence() }

// Lost is closed as soon as the holder can no longer be sure it holds the
// lock ([driver.Lock.Lost]): stop using what the lock protects.
func (k *Lock) Lost() <-chan struct{} { return k.l.Lost() }

// Unlock releases the lock; a second call, and one after the hold was
// lost, are as [driver.Lock.Unlock] says.
func (k *Lock) Unlock(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.unlocked {
		return nil
	}
	err := callErr(ctx, k.s, op{name: "Unlock", key: k.name}, func(ctx context.Context, _ driver.Store) error {
		return k.l.Unlock(ctx)
	})
	if err == nil || errors.Is(err, ErrLeaseLost) {
		k.unlocked = true // the loss is reported once
		close(k.done)
		if k.s.observed() {
			if err != nil {
				k.ended(LockLost, err)
			} else {
				k.ended(LockReleased, nil)
			}
		}
	}
	return err
}
