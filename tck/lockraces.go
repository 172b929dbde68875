package tck

import (
	"context"

	"fmt"
	"time"

	"github.com/cosid-go/store"
)

// raceRounds is how often the checks of a handover race repeat it: a bug
// that shows only in a narrow window shows in some round.
const raceRounds = 40

// checkTryLockAtHandover: a TryLock made right after the holder unlocks,
// while a waiter is queued, gives ErrLocked: the lock passes to the waiter,
// never to both. Driven over many rounds.
func checkTryLockAtHandover(e *env) {
	const name = "handover"
	holder := e.open(store.WithOwner("holder"))
	waiter := e.open(store.WithOwner("waiter"))
	third := e.open(store.WithOwner("third"))
	for round := range raceRounds {
		h := e.lock(holder, name)
		ch := e.lockAsync(e.timeout(e.lockWait), waiter, name)
		e.awaitWaiters(third, name, "holder", "waiter")
		e.unlock(h)
		l, err := third.Locks().TryLock(e.ctx, name)
		if err == nil {
			e.t.Errorf("round %d: TryLock right after the holder unlocked, with a waiter queued, got the lock (fence %d): two holders",
				round, l.Fence())
			_ = l.Unlock(e.ctx) // the failure is reported; free the lock
		} else {
			e.wantIs(err, store.ErrLocked, "round %d: TryLock right after the holder unlocked, with a waiter queued", round)
		}
		r := e.await(ch, fmt.Sprintf("round %d: Lock by the waiter", round))
		e.fatalIf(r.err, "round %d: Lock by the waiter", round)
		e.unlock(r.l)
		if e.t.Failed() {
			return
		}
	}
}

// checkCancelAtGrant: a waiter whose context ends at the instant it is
// handed the lock either takes it or passes it on: the waiter behind it
// gets the lock promptly. The cancel comes just before and just after the
// unlock, in alternate rounds.
func checkCancelAtGrant(e *env) {
	const name = "cancel-grant"
	holder := e.open(store.WithOwner("holder"))
	sa := e.open(store.WithOwner("a"))
	sb := e.open(store.WithOwner("b"))
	for round := range raceRounds {
		h := e.lock(holder, name)
		cancelA, chA, chB := e.queueAB(holder, sa, sb, name)
		if round%2 == 0 {
			cancelA()
			e.unlock(h)
		} else {
			e.unlock(h)
			cancelA()
		}
		ra := e.await(chA, fmt.Sprintf("round %d: Lock by the waiter cancelled at the handover", round))
		if ra.err == nil {
			e.unlock(ra.l)
		} else {
			e.wantIs(ra.err, context.Canceled, "round %d: Lock cancelled at the handover", round)
		}
		rb := e.await(chB, fmt.Sprintf("round %d: Lock by the waiter behind one cancelled at the handover (the lock was not passed on)", round))
		e.fatalIf(rb.err, "round %d: Lock by the waiter behind one cancelled at the handover", round)
		e.unlock(rb.l)
		e.awaitWaiters(holder, name)
		if e.t.Failed() {
			return
		}
	}
}

// checkMiddleCancel: after a waiter in the middle of the queue gives up,
// the one behind it keeps waiting while the holder still holds.
func checkMiddleCancel(e *env) {
	const name = "middle"
	holder := e.open(store.WithOwner("holder"))
	sa := e.open(store.WithOwner("a"))
	sb := e.open(store.WithOwner("b"))
	sc := e.open(store.WithOwner("c"))
	h := e.lock(holder, name)
	cancelA, chA, chB := e.queueAB(holder, sa, sb, name)
	defer cancelA()
	chC := e.lockAsync(e.timeout(e.lockWait), sc, name)
	e.awaitWaiters(holder, name, "holder", "a", "b", "c")

	cancelA()
	ra := e.await(chA, "Lock whose context was cancelled")
	if ra.err == nil {
		e.t.Fatalf("a Lock cancelled while the holder held got the lock")
	}
	e.awaitWaiters(holder, name, "holder", "b", "c")
	select {
	case rb := <-chB:
		if rb.err == nil {
			e.t.Errorf("the waiter behind a cancelled one got the lock (fence %d) while the holder (fence %d) still held it",
				rb.l.Fence(), h.Fence())
		} else {
			e.t.Errorf("the waiter behind a cancelled one stopped waiting: %v", rb.err)
		}
		return
	case <-time.After(e.short):
	}
	e.awaitWaiters(holder, name, "holder", "b", "c")
	e.unlock(h)
	rb := e.await(chB, "Lock by the waiter behind the cancelled one")
	e.fatalIf(rb.err, "Lock by the waiter behind the cancelled one")
	e.awaitWaiters(holder, name, "b", "c")
	e.unlock(rb.l)
	rc := e.await(chC, "Lock by the last waiter")
	e.fatalIf(rc.err, "Lock by the last waiter")
	e.unlock(rc.l)
}

// checkFIFOArrival: waiters get the lock in arrival order when that order
// is not the sort order of their owners (nor its reverse).
func checkFIFOArrival(e *env) {
	const name = "fifo-arrival"
	arrival := []string{"w-c", "w-a", "w-d", "w-b"}
	holder := e.open(store.WithOwner("holder"))
	h := e.lock(holder, name)
	granted := e.queueInOrder(holder, name, arrival)
	e.unlock(h)
	e.wantGrantOrder(granted, arrival)
}

// checkUnlockAfterLost: at the driver, Unlock of a hold lost when its store
// closed reports ErrLeaseLost, not success: the holder must learn that its
// critical section was not protected to the end.
func checkUnlockAfterLost(e *env) {
	const name = "unlock-lost"
	st := e.open(store.WithOwner("a"))
	l := e.driverLock(st, name, "a")
	e.fatalIf(st.Close(), "Close of the holder's store")
	select {
	case <-l.Lost():
	case <-time.After(e.prompt):
		e.t.Fatalf("Lost not closed within %v of closing the holder's store", e.prompt)
	}
	e.wantIs(l.Unlock(e.ctx), store.ErrLeaseLost, "driver Unlock of a hold lost when its store closed")
	e.fatalIf(l.Unlock(e.ctx), "second driver Unlock of a lost hold")
	e.unlock(e.lock(e.open(), name)) // the lock is free again
}

// checkLostBeforeGrant: when the holder's store closes, its Lost channel is
// closed before the next waiter, in another store, is granted the lock:
// there is never a moment with two holders that both believe they hold it.
func checkLostBeforeGrant(e *env) {
	const name = "lost-first"
	second := e.open(store.WithOwner("second"))
	for round := range raceRounds / 4 {
		first := e.open(store.WithOwner("first"))
		l1 := e.lock(first, name)
		type grant struct {
			l        *store.Lock
			err      error
			lostSeen bool
		}
		ch := make(chan grant, 1)
		ctx := e.timeout(e.lockWait)
		e.goroutine(func() {
			l, err := second.Locks().Lock(ctx, name)
			ch <- grant{l, err, isClosed(l1.Lost())}
		})
		e.awaitWaiters(second, name, "first", "second")
		e.fatalIf(first.Close(), "round %d: Close of the holder's store", round)
		var g grant
		select {
		case g = <-ch:
		case <-time.After(e.prompt):
			e.t.Fatalf("round %d: the waiter did not get the lock within %v of the holder's store closing", round, e.prompt)
		}
		e.fatalIf(g.err, "round %d: Lock by the waiter after the holder's store closed", round)
		if !g.lostSeen {
			e.t.Errorf("round %d: the waiter was granted the lock before the closed holder's Lost was closed", round)
		}
		e.unlock(g.l)
		if e.t.Failed() {
			return
		}
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
