package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
	"github.com/cosid-go/store/internal/sqlstore/mysqldialect"
)

var (
	_ driver.Locker     = (*driverStore)(nil)
	_ driver.LockLister = (*driverStore)(nil)
	_ driver.LostCause  = (*hold)(nil)
)

// pollEvery is how long a waiter sleeps at most between two looks at its
// queue: MySQL has no LISTEN/NOTIFY, so a waiter learns of another store's
// Unlock by looking (this store's own Unlocks wake its waiters at once).
// It costs a hand-over between stores up to this long, and one query per
// waiting Lock per period.
func pollEvery(t time.Duration) time.Duration {
	return min(100*time.Millisecond, max(10*time.Millisecond, t/10))
}

// Lock joins name's queue with a ticket (its fence) and waits, if wait,
// until it is the head. It looks again every pollEvery, at once when this
// store frees the name, and when a session ahead of it may be taken over.
// A failed or cancelled Lock costs nothing but itself: a row it may have
// written is removed (in the background if the server does not answer),
// and the lock session with every other hold of the store lives on.
func (s *driverStore) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	se, err := s.locks.Get(ctx)
	if err != nil {
		return nil, s.lockErr(err)
	}
	if !wait {
		// A holder whose session this store has seen stand still long
		// enough is taken over first, as a waiter would.
		if _, _, err := s.pass(ctx, se, name, math.MaxInt64); err != nil {
			return nil, s.health.Unavailable(err)
		}
	}
	floor := s.tickets.Seen()
	ticket, err := s.enqueue(ctx, se, name, owner, wait)
	if mysqldialect.Classify(err) == sqlstore.MissingParent {
		// The session row is gone (taken over or purged): its holds are
		// lost, and this call, which holds nothing yet, joins again on a
		// new session.
		se.Lose(fmt.Errorf("lock session %d was taken over or purged: %w", se.id, driver.ErrLeaseLost))
		if se, err = s.locks.Get(ctx); err != nil {
			return nil, s.health.Unavailable(err)
		}
		ticket, err = s.enqueue(ctx, se, name, owner, wait)
	}
	if errors.Is(err, driver.ErrSealed) || errors.Is(err, driver.ErrLocked) || errors.Is(err, driver.ErrCorrupt) {
		return nil, err
	}
	if err != nil {
		if mysqldialect.Classify(err) == sqlstore.MissingParent {
			se.Lose(fmt.Errorf("lock session %d was taken over or purged: %w", se.id, driver.ErrLeaseLost))
			return nil, fmt.Errorf("lock session expired while joining the queue: %w", driver.ErrLeaseLost)
		}
		if ticket != 0 {
			// The row may have been written (a commit with an unknown
			// outcome): remove it.
			s.abandon(se, name, ticket)
		}
		return nil, s.health.Unavailable(err)
	}
	if ticket <= floor {
		s.locks.fail(se)
		return nil, fmt.Errorf("lock ticket %d is not above %d, seen earlier by this store: the database went back (restored from a backup, or a replica promoted without the last commits): %w",
			ticket, floor, driver.ErrCorrupt)
	}
	s.tickets.Saw(ticket)
	wake, unwatch := s.locks.watch(name)
	defer unwatch()
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
			return nil, s.health.Unavailable(err)
		}
	}
}

// enqueue writes the waiter row; without wait only if nobody holds or
// waits. The name's row is locked first, then the state row, whose
// counter gives the ticket: tickets of a name commit in order, and no
// seal commits between the read of the seal and the commit. It returns
// the ticket once known, also with an error: the row may then have been
// written. A transaction the server aborted (a deadlock, a lock wait past
// innodb_lock_wait_timeout) is tried again within ctx.
func (s *driverStore) enqueue(ctx context.Context, se *session, name, owner string, wait bool) (int64, error) {
	var ticket int64
	err := s.db.retry(ctx, func() error {
		tx, err := s.pool.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, s.lq.LockName, name); err != nil {
			return err
		}
		t, err := newID(ctx, tx, s.lq.NewID)
		if err != nil {
			return err
		}
		var sealed bool
		var holder sql.NullString
		var fence sql.NullInt64
		if err := tx.QueryRowContext(ctx, s.lq.EnqueueCheck, name, name).Scan(&sealed, &holder, &fence); err != nil {
			return err
		}
		if sealed {
			return sqlstore.LocksSealed(name)
		}
		if !wait && fence.Valid {
			return fmt.Errorf("held by %s with fence %d: %w", holder.String, fence.Int64, driver.ErrLocked)
		}
		ticket = t
		if _, err := tx.ExecContext(ctx, s.lq.Enqueue, t, name, owner, se.id); err != nil {
			return err
		}
		s.hook("enqueue")
		return commit(ctx, tx)
	})
	if errors.Is(err, driver.ErrLocked) || errors.Is(err, driver.ErrSealed) {
		return 0, err
	}
	return ticket, err
}

// newID takes the next ticket or session id from the state row.
func newID(ctx context.Context, e execer, q string) (int64, error) {
	res, err := e.ExecContext(ctx, q)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if n != 1 {
		return 0, fmt.Errorf("mysql: the lock state row (cosid_lock_state id 1) is missing: %w", driver.ErrCorrupt)
	}
	return res.LastInsertId()
}

// pass looks at the queue up to ticket (sqlstore.Observations.Pass):
// nothing wakes a waiter of another store's Unlock, so it polls.
func (s *driverStore) pass(ctx context.Context, se *session, name string, ticket int64) (bool, time.Duration, error) {
	s.hook("pass")
	rows, err := s.pool.QueryContext(ctx, s.lq.Pass, ticket, name, ticket)
	if err != nil {
		return false, 0, err
	}
	var q []sqlstore.QueueEntry
	for rows.Next() {
		var e sqlstore.QueueEntry
		if err := rows.Scan(&e.Ticket, &e.Session, &e.Count, &e.TimeoutMS, &e.Sealed); err != nil {
			rows.Close()
			return false, 0, err
		}
		q = append(q, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, 0, err
	}
	return s.obs.Pass(ctx, sqlstore.PassRules{
		Takeover:  s.takeover,
		IsAborted: func(err error) bool { return mysqldialect.Classify(err) == sqlstore.Aborted },
		Most:      pollEvery(se.t), Margin: 10 * time.Millisecond,
	}, se, se.id, name, ticket, q)
}

// takeover deletes session id, with its rows, if its counter is still
// count.
func (s *driverStore) takeover(ctx context.Context, id, count int64) error {
	_, err := s.pool.ExecContext(ctx, s.lq.Takeover, id, count)
	return err
}

// abandon removes the row of a waiter that gives up, or of a Lock that
// failed after taking its ticket, on a context of its own (the caller's
// may have ended). A removal cannot miss a row whose enqueue is still in
// flight: that transaction holds the name's row, which leave locks first.
// If the server does not answer, the removal goes on in the background
// until it succeeds or the session is lost or closed: the session, and
// the store's other holds, live on.
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

// leave deletes the ticket's row, with the name's row locked first, and
// wakes this store's waiters of the name; it reports whether the row was
// there. A transaction the server aborted is tried again within ctx.
func (s *driverStore) leave(ctx context.Context, se *session, name string, ticket int64) (bool, error) {
	var found bool
	err := s.db.retry(ctx, func() error {
		tx, err := s.pool.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var one int
		if err := tx.QueryRowContext(ctx, s.lq.LockNameRow, name).Scan(&one); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		res, err := tx.ExecContext(ctx, s.lq.Leave, ticket, se.id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		found = n == 1
		return commit(ctx, tx)
	})
	if err == nil {
		s.locks.kick(name)
	}
	return found, err
}

// Locks lists every lock name ever used, sorted.
func (s *driverStore) Locks(ctx context.Context) ([]string, error) {
	names, err := s.names(ctx, s.lq.Locks)
	sort.Strings(names)
	return names, err
}

// ListLocks lists one keyset page of the names Locks lists
// (driver.LockLister).
func (s *driverStore) ListLocks(ctx context.Context, after string, limit int) ([]string, error) {
	return s.names(ctx, s.lq.ListLocks, after, limit)
}

func (s *driverStore) names(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := s.pool.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.lockErr(err)
	}
	defer rows.Close()
	names := []string{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, s.health.Unavailable(rows.Err())
}

// Waiters lists the live holder and waiters of name, in ticket order.
func (s *driverStore) Waiters(ctx context.Context, name string) ([]driver.Waiter, error) {
	var exists bool
	if err := s.pool.QueryRowContext(ctx, s.lq.LockRow, name).Scan(&exists); err != nil {
		return nil, s.lockErr(err)
	}
	if !exists {
		return nil, fmt.Errorf("no lock %q: %w", name, driver.ErrNotFound)
	}
	rows, err := s.pool.QueryContext(ctx, s.lq.Waiters, name)
	if err != nil {
		return nil, s.health.Unavailable(err)
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
	return out, s.health.Unavailable(rows.Err())
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
	found, err := h.s.leave(uctx, h.se, h.name, h.ticket)
	if err != nil {
		// The row stays until the removal, retried in the background,
		// succeeds; the store's other holds are not touched.
		h.s.locks.removeLater(h.se, h.name, h.ticket)
		h.unlocked = true
		return fmt.Errorf("unlock: %w; the removal of the hold goes on in the background", h.s.health.Unavailable(err))
	}
	h.unlocked = true
	if !found {
		return fmt.Errorf("the hold's row was gone: %w", driver.ErrLeaseLost)
	}
	return nil
}

// noTable is the servers' ER_NO_SUCH_TABLE.
const noTable = 1146

// lockErr is err of a lock call, saying so when the lock tables are
// missing: a store made before the driver had locks, opened since only
// without create (which adds them).
func (s *driverStore) lockErr(err error) error {
	var e *mysql.MySQLError
	if errors.As(err, &e) && e.Number == noTable {
		return fmt.Errorf("mysql: the store's lock tables are missing (the store was made before the driver had locks): open it once with create=true to add them: %w", err)
	}
	return s.health.Unavailable(err)
}

// connected reports a new lock session, with its id and T.
func (s *driverStore) connected(se *session) {
	s.health.OK()
	s.health.Report(driver.Event{Kind: driver.Connected, Server: s.health.Server(), SessionID: se.id, Timeout: se.t})
}

// expired reports a lock session another store took over or a purge
// deleted.
func (s *driverStore) expired(err error) {
	s.health.Report(driver.Event{Kind: driver.Expired, Err: err})
}

// hook calls the test hook, if set, at a named point.
func (s *driverStore) hook(point string) {
	if f := s.testHook.Load(); f != nil {
		(*f)(point)
	}
}
