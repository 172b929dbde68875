package sqlstore

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/cosid-go/store/driver"
)

// This file is a waiter's look at its lock's queue (a pass), the same in
// both SQL drivers; how they read the queue, take a session over and wake
// a waiter is the dialect's (NOTIFY on PostgreSQL, polling on MySQL).

// QueueEntry is one row of a lock's queue up to a waiter's ticket, as a
// dialect's Pass statement reads it: the entry's ticket, its fence (see
// RaisedFence), its session with that session's counter and T, and
// whether the store's locks are sealed.
type QueueEntry struct {
	Ticket, Fence, Session, Count, TimeoutMS int64
	Sealed                                   bool
}

// A ticket is its waiter's place in the queue and, usually, its fence. A
// RaiseLockFences that finds a waiter whose fence is not above its floor
// cannot renumber the rows (a waiter knows its row by its ticket), so it
// records an offset instead: the last ticket taken (RaisedLast) and the
// floor (RaisedOffset, never lowered), and moves the counter past their
// sum. A ticket at or below RaisedLast then has its ticket plus the offset
// as its fence: above the floor, growing along the queue, and below every
// ticket taken after the raise. The statements compute it; RaisedFence
// says how.
const (
	RaisedLast   = "lock_raised_last"
	RaisedOffset = "lock_raised_offset"
)

// RaisedFence is the fence of ticket under the raise's last and offset.
func RaisedFence(ticket, last, offset int64) int64 {
	if ticket <= last {
		return ticket + offset
	}
	return ticket
}

// RaiseShift is what RaiseLockFences(floor) records (RaisedLast and
// RaisedOffset) and the counter it moves to, given the counter's last
// value, the recorded last and offset, and the lowest waiter ticket (0:
// none). shift is false when no waiter's fence is at or below floor:
// only the counter moves, as before.
func RaiseShift(floor, counter, last, offset, lowest int64) (newLast, newOffset, newCounter int64, shift bool, err error) {
	if lowest == 0 || RaisedFence(lowest, last, offset) > floor {
		return last, offset, max(counter, floor), false, nil
	}
	newOffset = max(offset, floor)
	if newOffset > math.MaxInt64-counter {
		return 0, 0, 0, false, fmt.Errorf("fence floor %d: the waiters queued before it would need fences past the largest int64 (last ticket %d): %w",
			floor, counter, driver.ErrExhausted)
	}
	return counter, newOffset, counter + newOffset, true, nil
}

// PassRules are a dialect's parts of a pass: how it takes a session over,
// and how long its waiters wait between two passes.
type PassRules struct {
	// Takeover deletes session id, with its rows, if its counter is still
	// count, and wakes the new heads of its names.
	Takeover func(ctx context.Context, id, count int64) error
	// IsAborted reports an error of a transaction the server aborted.
	IsAborted func(err error) bool
	// Most is the wait when no session ahead may be taken over sooner.
	Most time.Duration
	// Margin is added to the time a session ahead must still stand still.
	Margin time.Duration
	// Aborted, if not 0, bounds the wait after a takeover the server
	// aborted (the session's rows are held by a transaction, which the
	// server ends within its bound).
	Aborted time.Duration
}

// Losable is a lock session a pass may find taken over.
type Losable interface {
	Lose(why error)
}

// tryTicket is the ticket of a TryLock's pass before it queues: it only
// takes over.
const tryTicket = math.MaxInt64

// Pass judges queue q, read (just before the call) up to ticket for a
// waiter of name on session se (id self): granted (fence, the waiter's
// QueueEntry.Fence, not 0) when ticket is the head, else how long to wait
// before the next pass (0: look again at once,
// after a takeover). ticket tryTicket is a TryLock's pass before it
// queues: it only takes over. It watches the sessions ahead of the waiter
// (o) and takes over those this store has seen stand still for their T;
// never its own session (an earlier Lock of this store). A queue without
// the ticket means the waiter's session was taken over: se is lost. A
// waiter queued before a seal is never granted after it.
func (o *Observations) Pass(ctx context.Context, r PassRules, se Losable, self int64, name string, ticket int64, q []QueueEntry) (fence int64, wait time.Duration, err error) {
	at := time.Now() // after the read: a counter seen is never older than at
	mine, sealed := false, false
	var before []QueueEntry
	for _, e := range q {
		sealed = e.Sealed
		if e.Ticket == ticket {
			mine, fence = true, e.Fence
			continue
		}
		before = append(before, e)
	}
	if !mine && ticket != tryTicket {
		err := fmt.Errorf("the lock's queue no longer has ticket %d (its session was taken over): %w", ticket, driver.ErrLeaseLost)
		se.Lose(err)
		return 0, 0, err
	}
	if sealed && mine {
		// Queued before the seal: never granted after it.
		return 0, 0, LocksSealed(name)
	}
	if len(before) == 0 {
		return fence, 0, nil
	}
	wait = r.Most
	tookOver := false
	done := map[int64]bool{self: true}
	for _, a := range before {
		if done[a.Session] {
			continue
		}
		done[a.Session] = true
		o.See(a.Session, a.Count, time.Duration(a.TimeoutMS)*time.Millisecond, at)
		left := o.StillFor(a.Session, a.Count, at)
		if left > 0 {
			wait = min(wait, left+r.Margin)
			continue
		}
		switch err := r.Takeover(ctx, a.Session, a.Count); {
		case err == nil:
			o.Forget(a.Session)
			tookOver = true
		case r.IsAborted(err):
			if r.Aborted > 0 {
				wait = min(wait, r.Aborted)
			}
		default:
			return 0, 0, err
		}
	}
	if tookOver {
		return 0, 0, nil // look again at once
	}
	return 0, wait, nil
}

// LocksSealed is the error of a Lock of name in a store whose locks are
// sealed.
func LocksSealed(name string) error {
	return fmt.Errorf("lock %q: the store's locks are sealed (they moved to another store): %w", name, driver.ErrSealed)
}

// TicketFloor is the highest lock ticket a store was given: a later one at
// or below it means the database went back (the regression guard of lock
// fences). Both drivers' session ids come from the tickets' counter and
// are recorded here too.
type TicketFloor struct{ last atomic.Int64 }

// Seen is the highest ticket recorded.
func (f *TicketFloor) Seen() int64 { return f.last.Load() }

// Saw records ticket t.
func (f *TicketFloor) Saw(t int64) {
	for old := f.last.Load(); t > old && !f.last.CompareAndSwap(old, t); old = f.last.Load() {
	}
}
