package tck

import (
	"fmt"
	"math"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// checkLockSeal: SealLocks (driver.LockSealer) refuses every later Lock
// and TryLock with ErrSealed, of names used and never used, from every
// store; a waiter queued before the seal is never granted (ErrSealed once
// the holder unlocks, at the latest); the holder keeps its hold and
// unlocks; the floor is at or above every fence handed out or queued; a
// purge keeps the seal; RaiseLockFences unseals.
func checkLockSeal(e *env) {
	a := e.open(store.WithOwner("a"))
	b := e.open(store.WithOwner("b"))
	c := e.open(store.WithOwner("c"))
	needDriver[driver.LockSealer](e, a)
	const name = "sealed-held"
	e.unlock(e.lock(b, "sealed-used"))
	held := e.lock(a, name)
	waiting := e.lockAsync(e.timeout(e.lockWait), b, name)
	e.awaitWaiters(c, name, "a", "b")
	ws, err := c.Locks().Waiters(e.ctx, name)
	e.fatalIf(err, "Waiters")
	if sealed, err := c.Locks().Sealed(e.ctx); err != nil || sealed {
		e.t.Fatalf("LocksSealed before any seal: %v, %v; want false", sealed, err)
	}

	floor, err := c.Locks().Seal(e.ctx)
	e.fatalIf(err, "SealLocks")
	for _, w := range ws {
		if w.Fence > floor {
			e.t.Errorf("SealLocks gave the floor %d, below the fence %d of %s, queued before", floor, w.Fence, w.Owner)
		}
	}
	for _, st := range []*store.Store{a, b, c} {
		if sealed, err := st.Locks().Sealed(e.ctx); err != nil || !sealed {
			e.t.Errorf("LocksSealed after SealLocks: %v, %v; want true from every store", sealed, err)
		}
	}
	for _, n := range []string{"sealed-used", "sealed-never-used", name} {
		_, err := c.Locks().TryLock(e.ctx, n)
		e.wantIs(err, store.ErrSealed, "TryLock(%q) after SealLocks", n)
		_, err = b.Locks().Lock(e.timeout(e.prompt), n)
		e.wantIs(err, store.ErrSealed, "Lock(%q) after SealLocks", n)
	}
	select {
	case <-held.Lost():
		e.t.Errorf("the holder's Lost closed at SealLocks: a holder keeps its hold")
	default:
	}
	e.unlock(held)
	r := e.await(waiting, "Lock queued before SealLocks, its holder unlocked")
	if r.err == nil {
		e.t.Errorf("a waiter queued before SealLocks was granted the lock (fence %d) after the seal", r.l.Fence())
		e.unlock(r.l)
	} else {
		e.wantIs(r.err, store.ErrSealed, "Lock queued before SealLocks")
	}
	e.awaitWaiters(c, name)
	again, err := a.Locks().Seal(e.ctx)
	e.fatalIf(err, "SealLocks again")
	if again < floor {
		e.t.Errorf("SealLocks again gave the floor %d, below the first %d", again, floor)
	}

	// A purge keeps the seal (driver.LockSealer): the locks still live
	// in the other store.
	if has[driver.Purger](c) {
		_, err := c.Purge(e.ctx)
		e.fatalIf(err, "Purge of a store whose locks are sealed")
		if sealed, err := b.Locks().Sealed(e.ctx); err != nil || !sealed {
			e.t.Errorf("LocksSealed after a purge: %v, %v; want true (a purge keeps the seal)", sealed, err)
		}
		_, err = a.Locks().TryLock(e.ctx, name)
		e.wantIs(err, store.ErrSealed, "TryLock(%q) after SealLocks and a purge", name)
	}

	// RaiseLockFences moves locks back in: the seal is undone.
	e.fatalIf(b.Locks().RaiseFences(e.ctx, again), "RaiseLockFences(%d) of a sealed store", again)
	if sealed, err := c.Locks().Sealed(e.ctx); err != nil || sealed {
		e.t.Errorf("LocksSealed after RaiseLockFences: %v, %v; want false (the locks moved back in)", sealed, err)
	}
	l, err := c.Locks().TryLock(e.ctx, name)
	e.fatalIf(err, "TryLock after RaiseLockFences unsealed the locks")
	if l.Fence() <= again {
		e.t.Errorf("TryLock after RaiseLockFences(%d) got fence %d", again, l.Fence())
	}
	e.unlock(l)
}

// checkRaiseLockFences: after RaiseLockFences(f) every fence handed out,
// of a name used before or not, by any store, is above f; a lower floor
// lowers nothing.
func checkRaiseLockFences(e *env) {
	a, b := e.open(store.WithOwner("a")), e.open(store.WithOwner("b"))
	needDriver[driver.LockSealer](e, a)
	l := e.lock(a, "raise-used")
	first := l.Fence()
	e.unlock(l)
	floor := first + 1_000_000
	e.fatalIf(a.Locks().RaiseFences(e.ctx, floor), "RaiseLockFences(%d)", floor)
	for _, n := range []string{"raise-used", "raise-new"} {
		l := e.lock(b, n)
		if l.Fence() <= floor {
			e.t.Errorf("Lock(%q) after RaiseLockFences(%d) got fence %d", n, floor, l.Fence())
		}
		// Waiters tells the holder's fence as the hold has it, raised too.
		if ws, err := a.Locks().Waiters(e.ctx, n); err != nil || len(ws) != 1 || ws[0].Fence != l.Fence() {
			e.t.Errorf("Waiters(%q) after RaiseLockFences(%d) = %+v, %v; want the holder b at fence %d (driver.Waiter.Fence: "+
				"the fence the entry holds)", n, floor, ws, err, l.Fence())
		}
		floor = max(floor, l.Fence())
		e.unlock(l)
	}
	e.fatalIf(b.Locks().RaiseFences(e.ctx, first), "RaiseLockFences(%d), below", first)
	if l := e.lock(a, "raise-used"); l.Fence() <= floor {
		e.t.Errorf("RaiseLockFences(%d) lowered the fences: Lock got %d after %d", first, l.Fence(), floor)
	} else {
		e.unlock(l)
	}
	for _, bad := range []int64{-1, math.MaxInt64} {
		e.wantIs(a.Locks().RaiseFences(e.ctx, bad), store.ErrInvalidArgument, "RaiseLockFences(%d)", bad)
	}
	if sealed, err := a.Locks().Sealed(e.ctx); err != nil || sealed {
		e.t.Errorf("LocksSealed after RaiseLockFences: %v, %v; want false", sealed, err)
	}
}

// checkLockSealRaiseQueued: a waiter queued before SealLocks is never
// granted the lock (driver.LockSealer), even when RaiseLockFences undid
// the seal before its holder unlocked: the locks moved out and back in
// meanwhile, and their holders elsewhere held fences up to the raise's
// floor. A driver that looks at the seal only when a waiter reads its
// queue misses a seal and a raise between two looks.
func checkLockSealRaiseQueued(e *env) {
	a := e.open(store.WithOwner("a"))
	b := e.open(store.WithOwner("b"))
	c := e.open(store.WithOwner("c"))
	needDriver[driver.LockSealer](e, a)
	const name = "sealed-raised"
	held := e.lock(a, name)
	waiting := e.lockAsync(e.timeout(e.lockWait), b, name)
	e.awaitWaiters(c, name, "a", "b")
	floor, err := c.Locks().Seal(e.ctx)
	e.fatalIf(err, "SealLocks")
	raised := floor + 1_000_000 // the fences handed out elsewhere meanwhile
	e.fatalIf(c.Locks().RaiseFences(e.ctx, raised), "RaiseLockFences(%d)", raised)
	e.unlock(held)
	r := e.await(waiting, "Lock queued before SealLocks and RaiseLockFences, its holder unlocked")
	if r.err == nil {
		e.t.Errorf("a waiter queued before SealLocks (floor %d) was granted the lock (fence %d) after it, the seal undone by RaiseLockFences(%d)",
			floor, r.l.Fence(), raised)
		e.unlock(r.l)
	} else {
		e.wantIs(r.err, store.ErrSealed, "Lock queued before SealLocks, then RaiseLockFences")
	}
	// The locks are open again, to waiters queued after the raise.
	l, err := c.Locks().TryLock(e.ctx, name)
	e.fatalIf(err, "TryLock after RaiseLockFences")
	if l.Fence() <= raised {
		e.t.Errorf("TryLock after RaiseLockFences(%d) got fence %d", raised, l.Fence())
	}
	e.unlock(l)
}

// checkLockRaiseQueued: RaiseLockFences(f) on a store never sealed makes
// every fence handed out later above f, a waiter's queued before the
// raise included: it is granted a fence above f (still above its
// predecessors', FIFO kept), not the one it was shown when it queued. A
// driver that fixes a waiter's fence at enqueue hands out, after the
// raise, a fence at or below the floor.
func checkLockRaiseQueued(e *env) {
	a := e.open(store.WithOwner("a"))
	b := e.open(store.WithOwner("b"))
	c := e.open(store.WithOwner("c"))
	needDriver[driver.LockSealer](e, a)
	const name = "raise-queued"
	held := e.lock(a, name)
	waiting := e.lockAsync(e.timeout(e.lockWait), b, name)
	e.awaitWaiters(c, name, "a", "b")
	ws, err := c.Locks().Waiters(e.ctx, name)
	e.fatalIf(err, "Waiters")
	floor := held.Fence() + 1_000_000 // above every fence so far
	for _, w := range ws {
		floor = max(floor, w.Fence+1_000_000)
	}
	e.fatalIf(c.Locks().RaiseFences(e.ctx, floor), "RaiseLockFences(%d)", floor)
	e.unlock(held)
	r := e.await(waiting, "Lock queued before RaiseLockFences, its holder unlocked")
	e.fatalIf(r.err, "Lock queued before RaiseLockFences(%d)", floor)
	if r.l.Fence() <= floor {
		e.t.Errorf("a waiter queued before RaiseLockFences(%d) was granted fence %d after it, at or below the floor "+
			"(see driver.LockSealer.RaiseLockFences: every fence handed out later is above floor)", floor, r.l.Fence())
	}
	e.unlock(r.l)
	// The next holder continues above it.
	l := e.lock(c, name)
	if l.Fence() <= max(floor, r.l.Fence()) {
		e.t.Errorf("Lock after RaiseLockFences(%d) and a holder with fence %d got fence %d", floor, r.l.Fence(), l.Fence())
	}
	e.unlock(l)
}

// checkLockRaiseTwiceQueued: two RaiseLockFences while waiters queue, one
// before the first raise, one between the raises, the second raise above
// the fences the first gave, then a third below them. Each waiter is
// granted the fence Waiters listed for it after the last raise, above
// every raise's floor and its predecessor's fence (FIFO kept); the raise
// below lowers nothing. A driver that keeps one raise's offset for the
// waiters a raise passed, or renumbers only the waiters queued before
// the first, hands out a fence at or below a floor, or one not above the
// previous holder's.
func checkLockRaiseTwiceQueued(e *env) {
	a := e.open(store.WithOwner("a"))
	b := e.open(store.WithOwner("b"))
	c := e.open(store.WithOwner("c"))
	d := e.open(store.WithOwner("d"))
	needDriver[driver.LockSealer](e, a)
	const name = "raise-twice"
	held := e.lock(a, name)
	first := e.lockAsync(e.timeout(e.lockWait), b, name)
	e.awaitWaiters(d, name, "a", "b")
	top := func() int64 {
		e.t.Helper()
		ws, err := d.Locks().Waiters(e.ctx, name)
		e.fatalIf(err, "Waiters")
		m := held.Fence()
		for _, w := range ws {
			m = max(m, w.Fence)
		}
		return m
	}
	floor1 := top() + 1_000
	e.fatalIf(d.Locks().RaiseFences(e.ctx, floor1), "RaiseLockFences(%d)", floor1)
	second := e.lockAsync(e.timeout(e.lockWait), c, name)
	e.awaitWaiters(d, name, "a", "b", "c")
	floor2 := top() + 1_000 // above the fences the first raise gave
	e.fatalIf(d.Locks().RaiseFences(e.ctx, floor2), "RaiseLockFences(%d)", floor2)
	e.fatalIf(d.Locks().RaiseFences(e.ctx, floor1/2), "RaiseLockFences(%d), below", floor1/2)

	ws, err := d.Locks().Waiters(e.ctx, name)
	e.fatalIf(err, "Waiters after the raises")
	if len(ws) != 3 {
		e.t.Fatalf("Waiters after the raises = %+v, want the holder a and the waiters b and c", ws)
	}
	prev := held.Fence()
	e.unlock(held)
	for i, ch := range []<-chan lockResult{first, second} {
		w := ws[i+1]
		r := e.await(ch, fmt.Sprintf("Lock of %s, queued before RaiseLockFences(%d), its predecessor unlocked", w.Owner, floor2))
		e.fatalIf(r.err, "Lock of %s", w.Owner)
		switch f := r.l.Fence(); {
		case f <= floor2:
			e.t.Errorf("%s, queued before RaiseLockFences(%d) and RaiseLockFences(%d), was granted fence %d, at or below a floor",
				w.Owner, floor1, floor2, f)
		case f <= prev:
			e.t.Errorf("%s was granted fence %d, not above its predecessor's %d", w.Owner, f, prev)
		case f != w.Fence:
			e.t.Errorf("%s was granted fence %d; Waiters listed %d after the last raise (driver.Waiter.Fence: the one it will hold)",
				w.Owner, f, w.Fence)
		}
		prev = r.l.Fence()
		e.unlock(r.l)
	}
	if l := e.lock(a, name); l.Fence() <= prev {
		e.t.Errorf("Lock after the raises and a holder with fence %d got fence %d", prev, l.Fence())
	} else {
		e.unlock(l)
	}
}
