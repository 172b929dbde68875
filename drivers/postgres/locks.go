package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
	"github.com/cosid-go/store/internal/sqlstore/pgdialect"
)

var (
	_ driver.Locker    = (*driverStore)(nil)
	_ driver.LostCause = (*hold)(nil)
)

// Lock joins name's queue with a ticket (its fence) and waits, if wait,
// until it is the head. It wakes on a notification naming its ticket, or
// when a session ahead of it may be taken over. A failed or cancelled Lock
// costs nothing but itself: a row it may have written is removed (in the
// background if the server does not answer), and the lock session with
// every other hold of the store lives on.
func (s *driverStore) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	se, err := s.locks.Get(ctx)
	if err != nil {
		return nil, s.unavailable(err)
	}
	if !wait {
		// A holder whose session this store has seen stand still long
		// enough is taken over first, as a waiter would.
		if _, _, err := s.pass(ctx, se, name, math.MaxInt64); err != nil {
			return nil, s.unavailable(err)
		}
	}
	floor := s.tickets.Seen()
	ticket, err := s.enqueue(ctx, se, name, owner, wait)
	if pgdialect.Classify(err) == sqlstore.MissingParent {
		// The session row is gone (taken over or purged): its holds are
		// lost, and this call, which holds nothing yet, joins again on a
		// new session.
		se.Lose(fmt.Errorf("lock session %d was taken over or purged: %w", se.id, driver.ErrLeaseLost))
		if se, err = s.locks.Get(ctx); err != nil {
			return nil, s.unavailable(err)
		}
		ticket, err = s.enqueue(ctx, se, name, owner, wait)
	}
	if errors.Is(err, driver.ErrSealed) {
		return nil, err
	}
	if err != nil {
		if pgdialect.Classify(err) == sqlstore.MissingParent {
			// The session row is gone again: taken over or purged.
			se.Lose(fmt.Errorf("lock session %d was taken over or purged: %w", se.id, driver.ErrLeaseLost))
			return nil, fmt.Errorf("lock session expired while joining the queue: %w", driver.ErrLeaseLost)
		}
		if ticket != 0 {
			// The row may have been written (a commit with an unknown
			// outcome): remove it.
			s.abandon(se, name, ticket)
		}
		return nil, s.unavailable(err)
	}
	if ticket <= floor {
		s.locks.fail(se)
		return nil, fmt.Errorf("lock ticket %d is not above %d, seen earlier by this store: the database went back (restored from a backup, or a replica promoted without the last commits): %w",
			ticket, floor, driver.ErrCorrupt)
	}
	s.tickets.Saw(ticket)
	wake := se.watch(ticket)
	defer se.unwatch(ticket)
	for {
		granted, wait, err := s.pass(ctx, se, name, ticket)
		if granted {
			return &hold{s: s, se: se, name: name, ticket: ticket}, nil
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
			case <-s.locks.Done():
				err = driver.ErrClosed
			}
			timer.Stop()
		}
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			s.abandon(se, name, ticket)
			if errors.Is(err, driver.ErrSealed) {
				return nil, err
			}
			return nil, s.unavailable(err)
		}
	}
}

// enqueue writes the waiter row; without wait only if nobody holds or
// waits. The name's row is locked, so tickets of a name commit in order.
// It returns the ticket once known, also with an error: the row may then
// have been written. A transaction the server aborted (a lock wait past
// lock_timeout, a deadlock) is tried again within ctx.
func (s *driverStore) enqueue(ctx context.Context, se *session, name, owner string, wait bool) (int64, error) {
	for {
		ticket, err := s.enqueueOnce(ctx, se, name, owner, wait)
		if !errors.Is(err, errNoName) {
			return ticket, err
		}
		// The name's first use (or a purge deleted its row since): its row
		// is committed first, on its own (see LockName).
		if _, err := s.pool.Exec(ctx, s.lq.NewName, name); err != nil {
			return 0, err
		}
	}
}

// errNoName: the name has no row yet.
var errNoName = errors.New("no lock row for the name")

func (s *driverStore) enqueueOnce(ctx context.Context, se *session, name, owner string, wait bool) (int64, error) {
	var ticket int64
	err := retryAborted(ctx, func() error {
		return pgx.BeginTxFunc(ctx, s.pool, beginBounded(s.cfg.LockTimeout), func(tx pgx.Tx) error {
			var t int64
			if err := tx.QueryRow(ctx, s.lq.LockName, name).Scan(&t); err != nil {
				if !errors.Is(err, pgx.ErrNoRows) {
					return err
				}
				// No row to make for a store whose locks are sealed.
				var sealed bool
				if err := tx.QueryRow(ctx, s.lq.LocksSealed).Scan(&sealed); err != nil {
					return err
				}
				if sealed {
					return sqlstore.LocksSealed(name)
				}
				return errNoName
			}
			// After LockName: a seal committed before it is seen, one
			// after it waits for this transaction (lockseal.go).
			var sealed bool
			if err := tx.QueryRow(ctx, s.lq.LocksSealed).Scan(&sealed); err != nil {
				return err
			}
			if sealed {
				return sqlstore.LocksSealed(name)
			}
			if !wait {
				var holder string
				var fence int64
				err := tx.QueryRow(ctx, s.lq.LockHead, name).Scan(&holder, &fence)
				if err == nil {
					return fmt.Errorf("held by %s with fence %d: %w", holder, fence, driver.ErrLocked)
				}
				if !errors.Is(err, pgx.ErrNoRows) {
					return err
				}
			}
			ticket = t
			if _, err := tx.Exec(ctx, s.lq.Enqueue, t, name, owner, se.id); err != nil {
				return err
			}
			s.hook("enqueue")
			return nil
		})
	})
	if errors.Is(err, driver.ErrLocked) || errors.Is(err, driver.ErrSealed) {
		return 0, err
	}
	return ticket, err
}

// pass looks at the queue up to ticket (sqlstore.Observations.Pass): a
// notification usually wakes a waiter first, so the wait is long.
func (s *driverStore) pass(ctx context.Context, se *session, name string, ticket int64) (bool, time.Duration, error) {
	s.hook("pass")
	rows, err := s.pool.Query(ctx, s.lq.Pass, name, ticket)
	if err != nil {
		return false, 0, err
	}
	q, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (e sqlstore.QueueEntry, err error) {
		err = row.Scan(&e.Ticket, &e.Session, &e.Count, &e.TimeoutMS, &e.Sealed)
		return e, err
	})
	if err != nil {
		return false, 0, err
	}
	return s.obs.Pass(ctx, sqlstore.PassRules{
		Takeover: s.takeover, IsAborted: aborted,
		Most: se.t + 20*time.Millisecond, Margin: 20 * time.Millisecond, Aborted: 120 * time.Millisecond,
	}, se, se.id, name, ticket, q)
}

// takeover deletes session id, with its rows, if its counter is still
// count, and wakes the new heads of its names.
func (s *driverStore) takeover(ctx context.Context, id, count int64) error {
	b := &pgx.Batch{}
	b.Queue(s.lq.LockSessions, id)
	b.Queue(s.lq.Takeover, id, count, s.locks.channel)
	_, err := countSecond(s.pool.SendBatch(ctx, b))
	return err
}

// abandon removes the row of a waiter that gives up, or of a Lock that
// failed after taking its ticket, on a context of its own (the caller's
// may have ended). A removal cannot miss a row whose enqueue is still in
// flight: the ticket came from that transaction, which holds the name's
// row lock, and leave locks that row first, so it waits for the commit
// (or for the server to end the transaction). If the server does not answer, the removal goes on in
// the background until it succeeds or the session is lost or closed: the
// session, and the store's other holds, live on.
func (s *driverStore) abandon(se *session, name string, ticket int64) {
	if se.IsLost() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), se.t)
	defer cancel()
	if _, err := s.leave(ctx, se, name, ticket); err != nil {
		s.locks.removeLater(se, name, ticket)
	}
}

// leave deletes the ticket's row and wakes the next head, in one round
// trip; it reports whether the row was there.
func (s *driverStore) leave(ctx context.Context, se *session, name string, ticket int64) (bool, error) {
	b := &pgx.Batch{}
	b.Queue(s.lq.LockNameRow, name)
	b.Queue(s.lq.Leave, ticket, se.id, s.locks.channel)
	return countSecond(s.pool.SendBatch(ctx, b))
}

// countSecond reads a batch of two queries and counts the second's rows.
func countSecond(br pgx.BatchResults) (bool, error) {
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return false, err
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, err
	}
	if rows, err = br.Query(); err != nil {
		return false, err
	}
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, err
	}
	return n == 1, br.Close()
}

// Locks lists every lock name ever used, sorted.
func (s *driverStore) Locks(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, s.lq.Locks)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	if names == nil {
		names = []string{}
	}
	sort.Strings(names)
	return names, nil
}

// ListLocks lists one keyset page of the names Locks lists
// (driver.LockLister).
func (s *driverStore) ListLocks(ctx context.Context, after string, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, s.lq.ListLocks, after, limit)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if names == nil {
		names = []string{}
	}
	return names, err
}

// Waiters lists the live holder and waiters of name, in ticket order.
func (s *driverStore) Waiters(ctx context.Context, name string) ([]driver.Waiter, error) {
	var exists bool
	if err := s.pool.QueryRow(ctx, s.lq.LockRow, name).Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return nil, fmt.Errorf("no lock %q: %w", name, driver.ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, s.lq.Waiters, name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []driver.Waiter{}
	for rows.Next() {
		var w driver.Waiter
		if err := rows.Scan(&w.Owner, &w.Fence); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// hold is a held lock.
type hold struct {
	s      *driverStore
	se     *session
	name   string
	ticket int64

	mu       sync.Mutex
	unlocked bool
}

func (h *hold) Fence() int64 { return h.ticket }

// Lost looks at the session's deadline itself (sqlstore.Liveness).
func (h *hold) Lost() <-chan struct{} { return h.se.Lost() }

// LostErr says why the hold was lost, once Lost is closed
// (driver.LostCause).
func (h *hold) LostErr() error { return h.se.Err() }

// Unlock deletes this hold's row only, whatever ctx says: a hold left
// behind would block everyone until its session expires.
func (h *hold) Unlock(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.unlocked {
		return nil
	}
	if h.se.IsLost() {
		h.unlocked = true
		return fmt.Errorf("lock session lost while held: %w", driver.ErrLeaseLost)
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.se.t)
	defer cancel()
	// A deadlock or lock_timeout abort rolled the whole batch back (the
	// row is still there): trying again re-reads, so it is safe.
	var found bool
	err := retryAborted(uctx, func() error {
		var err error
		found, err = h.s.leave(uctx, h.se, h.name, h.ticket)
		return err
	})
	if err != nil {
		// The row stays until the removal, retried in the background,
		// succeeds; the store's other holds are not touched.
		h.s.locks.removeLater(h.se, h.name, h.ticket)
		h.unlocked = true
		return fmt.Errorf("unlock: %w; the removal of the hold goes on in the background", h.s.unavailable(err))
	}
	h.unlocked = true
	if !found {
		return fmt.Errorf("the hold's row was gone: %w", driver.ErrLeaseLost)
	}
	return nil
}
