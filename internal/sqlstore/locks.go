package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cosid-go/store/driver"
)

// This file is the Lock call and the hold both SQL drivers share (the
// rule: docs/design.md, Locks on PostgreSQL). What differs is each
// driver's LockQueue: its statements, and how a waiter is woken (a NOTIFY
// on PostgreSQL; on MySQL, this store's own Unlocks, and polling).

// LockQueue is a SQL driver's access to its lock queues.
type LockQueue[S LockSession] struct {
	// Enqueue writes a waiter row of name for se; without wait only if
	// nobody holds or waits (else ErrLocked). It returns the ticket once
	// known, also with an error: the row may then have been written.
	Enqueue func(ctx context.Context, se S, name, owner string, wait bool) (int64, error)
	// Pass reads name's queue up to ticket and judges it
	// (Observations.Pass): fence is not 0 when granted, the waiter's fence
	// as read with the queue (QueueEntry.Fence).
	Pass func(ctx context.Context, se S, name string, ticket int64) (fence int64, wait time.Duration, err error)
	// Leave deletes se's row of name with ticket, the name's row locked
	// first (so it waits for an enqueue of the name still in flight), and
	// wakes the next head; it reports whether the row was there. A
	// transaction the server aborted is tried again within ctx.
	Leave func(ctx context.Context, se S, name string, ticket int64) (bool, error)
	// Watch returns what wakes a waiter of name with ticket sooner than
	// its next pass, and what ends the watch.
	Watch func(se S, name string, ticket int64) (<-chan struct{}, func())
	// MissingParent reports an error of a row whose session row is gone.
	MissingParent func(error) bool
	// SessionErr is the error of a Lock that got no session.
	SessionErr func(error) error
	// Unavailable is the error of a Lock or Unlock that failed
	// (Health.Unavailable).
	Unavailable func(error) error
}

// Lock joins name's queue with a ticket (its fence) and waits, if wait,
// until it is the head, looking again when woken (Watch), when a session
// ahead of it may be taken over, and at the latest after the wait its
// pass gave. A failed or cancelled Lock costs nothing but itself: a row
// it may have written is removed (in the background if the server does
// not answer), and the lock session with every other hold of the store
// lives on.
func (ss *Sessions[S]) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	q := ss.q
	se, err := ss.Get(ctx)
	if err != nil {
		return nil, q.SessionErr(err)
	}
	if !wait {
		// A holder whose session this store has seen stand still long
		// enough is taken over first, as a waiter would.
		if _, _, err := q.Pass(ctx, se, name, tryTicket); err != nil {
			return nil, q.Unavailable(err)
		}
	}
	floor := ss.tickets.Seen()
	ticket, err := q.Enqueue(ctx, se, name, owner, wait)
	if q.MissingParent(err) {
		// The session row is gone (taken over or purged): its holds are
		// lost, and this call, which holds nothing yet, joins again on a
		// new session.
		se.Lose(fmt.Errorf("lock session %d was taken over or purged: %w", se.ID(), driver.ErrLeaseLost))
		if se, err = ss.Get(ctx); err != nil {
			return nil, q.Unavailable(err)
		}
		ticket, err = q.Enqueue(ctx, se, name, owner, wait)
	}
	if errors.Is(err, driver.ErrSealed) || errors.Is(err, driver.ErrLocked) || errors.Is(err, driver.ErrCorrupt) {
		return nil, err
	}
	if err != nil {
		if q.MissingParent(err) {
			// The session row is gone again: taken over or purged.
			se.Lose(fmt.Errorf("lock session %d was taken over or purged: %w", se.ID(), driver.ErrLeaseLost))
			return nil, fmt.Errorf("lock session expired while joining the queue: %w", driver.ErrLeaseLost)
		}
		if ticket != 0 {
			// The row may have been written (a commit with an unknown
			// outcome): remove it.
			ss.Abandon(se, name, ticket)
		}
		return nil, q.Unavailable(err)
	}
	if ticket <= floor {
		ss.Fail(se)
		return nil, fmt.Errorf("lock ticket %d is not above %d, seen earlier by this store: the database went back (restored from a backup, or a replica promoted without the last commits): %w",
			ticket, floor, driver.ErrCorrupt)
	}
	ss.tickets.Saw(ticket)
	wake, unwatch := q.Watch(se, name, ticket)
	defer unwatch()
	for {
		fence, wait, err := q.Pass(ctx, se, name, ticket)
		if fence != 0 {
			// A fence above the ticket (a raise's offset, RaisedFence) is
			// below the counter, which the raise moved past it: the guard
			// keeps it too, so a counter gone back below it (a restore of
			// a dump taken before the raise) is refused, not given again.
			ss.tickets.Saw(fence)
			return &Hold[S]{ss: ss, se: se, name: name, ticket: ticket, fence: fence}, nil
		}
		if err == nil && wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-wake:
			case <-timer.C:
			case <-ctx.Done():
				err = ctx.Err()
			case <-se.Lost():
				err = fmt.Errorf("lock session lost while waiting: %w", driver.ErrLeaseLost)
			case <-ss.Done():
				err = driver.ErrClosed
			}
			timer.Stop()
		}
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			ss.Abandon(se, name, ticket)
			if errors.Is(err, driver.ErrSealed) {
				return nil, err
			}
			return nil, q.Unavailable(err)
		}
	}
}

// Abandon removes the row of a waiter that gives up, or of a Lock that
// failed after taking its ticket, on a context of its own (the caller's
// may have ended). A removal cannot miss a row whose enqueue is still in
// flight: that transaction holds the name's row, which Leave locks first,
// so it waits for the commit (or for the server to end the transaction).
// If the server does not answer, the removal goes on in the background
// until it succeeds or the session is lost or closed: the session, and
// the store's other holds, live on.
func (ss *Sessions[S]) Abandon(se S, name string, ticket int64) {
	if se.IsLost() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), se.T())
	defer cancel()
	if _, err := ss.q.Leave(ctx, se, name, ticket); err != nil {
		ss.RemoveLater(se, name, ticket)
	}
}

// Fail gives up a session whose rows may be in an unknown state: it stops
// confirming (so its rows can be taken over after T) and deletes them if
// it can.
func (ss *Sessions[S]) Fail(se S) {
	ctx, cancel := context.WithTimeout(context.Background(), se.T())
	defer cancel()
	_ = se.End(ctx)
}
