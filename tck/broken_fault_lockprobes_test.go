package tck_test

// The probes of the broken lock variants (see checkProbe): each drives
// memory stores of one fresh state, wrapped or sound, directly.

import (
	"context"
	"fmt"
	"time"

	"github.com/cosid-go/store/driver"
)

// lockers opens n stores of one fresh state, as lockers.
func lockers(tg target, n int) ([]driver.Locker, func()) {
	ds, _ := tg.openN(n)
	ls := make([]driver.Locker, n)
	for i, d := range ds {
		ls[i] = d.(driver.Locker)
	}
	return ls, func() {
		for _, d := range ds {
			d.Close()
		}
	}
}

func lockAsync(ctx context.Context, k driver.Locker, name, owner string) chan lockResult {
	ch := make(chan lockResult, 1)
	go func() {
		l, err := k.Lock(ctx, name, owner, true)
		ch <- lockResult{l, err}
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
func probeTryLockGap(ctx context.Context, tg target) (string, error) {
	ks, done := lockers(tg, 3)
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
func probeDropAtGrant(ctx context.Context, tg target) (string, error) {
	stuck := 0
	for range 20 {
		ks, done := lockers(tg, 3)
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
func probeWakeBehind(ctx context.Context, tg target) (string, error) {
	ks, done := lockers(tg, 3)
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
		if b.err == nil {
			_ = b.l.Unlock(ctx) // the probe is done with it
		}
		return fmt.Sprintf("the waiter behind returned while the holder held: error %v", b.err), nil
	case <-time.After(200 * time.Millisecond):
		return "the waiter behind kept waiting", nil
	}
}

// probeSorted: waiters w-c then w-a queue behind a holder.
func probeSorted(ctx context.Context, tg target) (string, error) {
	ks, done := lockers(tg, 3)
	defer done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the waits
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
	owners := []string{}
	for _, w := range ws {
		owners = append(owners, w.Owner)
	}
	return fmt.Sprintf("queue: %q", owners), err
}

func probeUnlockLost(ctx context.Context, tg target) (string, error) {
	d, _ := tg.open()
	l, err := d.(driver.Locker).Lock(ctx, "n", "a", false)
	if err != nil {
		return "", err
	}
	if err := d.Close(); err != nil {
		return "", err
	}
	return fmt.Sprintf("Unlock after the store closed: %v", l.Unlock(ctx)), nil
}

// probeLostAfterGrant: is the closed holder's Lost closed when the waiter
// is granted the lock?
func probeLostAfterGrant(ctx context.Context, tg target) (string, error) {
	ks, done := lockers(tg, 2)
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

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
