package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
	"github.com/cosid-go/store/internal/sqlstore/mysqldialect"
)

var (
	_ driver.Locker     = (*driverStore)(nil)
	_ driver.LockLister = (*driverStore)(nil)
	_ driver.LostCause  = (*sqlstore.Hold[*session])(nil)
)

// pollEvery is how long a waiter sleeps at most between two looks at its
// queue: MySQL has no LISTEN/NOTIFY, so a waiter learns of another store's
// Unlock by looking (this store's own Unlocks wake its waiters at once).
// It costs a hand-over between stores up to this long, and one query per
// waiting Lock per period.
func pollEvery(t time.Duration) time.Duration {
	return min(100*time.Millisecond, max(10*time.Millisecond, t/10))
}

// Lock joins name's queue and waits, if wait, until it is the head
// (sqlstore.Sessions.Lock). A waiter looks again every pollEvery, at once
// when this store frees the name, and when a session ahead of it may be
// taken over.
func (s *driverStore) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	return s.locks.Lock(ctx, name, owner, wait)
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
	floor := s.locks.Tickets().Seen()
	err := s.db.retry(ctx, func() error {
		tx, err := s.pool.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, s.lq.LockName, name); err != nil {
			return err
		}
		t, err := s.newID(ctx, tx, floor)
		if err != nil {
			return err
		}
		var sealed bool
		var holder sql.NullString
		var head sql.NullInt64 // the holder's ticket: its fence is this, or above after a raise
		if err := tx.QueryRowContext(ctx, s.lq.EnqueueCheck, name, name).Scan(&sealed, &holder, &head); err != nil {
			return err
		}
		if sealed {
			return sqlstore.LocksSealed(name)
		}
		if !wait && head.Valid {
			return fmt.Errorf("held by %s (queue ticket %d): %w", holder.String, head.Int64, driver.ErrLocked)
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

// newID takes the next ticket or session id from the state row, above
// floor, the highest this store was given or saw. A counter below it went
// back (a restored backup): it is left as it is, so that the ids between
// stay unused until the fences are raised, however often this store tries
// meanwhile (a try that took one each time would soon reach ids handed
// out before the restore that this store never saw).
func (s *driverStore) newID(ctx context.Context, e execer, floor int64) (int64, error) {
	res, err := e.ExecContext(ctx, s.lq.NewID, floor)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if n == 1 {
		return res.LastInsertId()
	}
	var ticket int64
	var sealed bool
	err = e.QueryRowContext(ctx, s.lq.StateRead).Scan(&ticket, &sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("mysql: the lock state row (cosid_lock_state id 1) is missing: %w", driver.ErrCorrupt)
	}
	if err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("the lock counter is at %d, below %d, a ticket or session id this store saw: the database went back (restored from a backup, or a replica promoted without the last commits): %w",
		ticket, floor, driver.ErrCorrupt)
}

// pass looks at the queue up to ticket (sqlstore.Observations.Pass):
// nothing wakes a waiter of another store's Unlock, so it polls.
func (s *driverStore) pass(ctx context.Context, se *session, name string, ticket int64) (int64, time.Duration, error) {
	s.hook("pass")
	rows, err := s.pool.QueryContext(ctx, s.lq.Pass, ticket, name, ticket)
	if err != nil {
		return 0, 0, err
	}
	var q []sqlstore.QueueEntry
	for rows.Next() {
		var e sqlstore.QueueEntry
		if err := rows.Scan(&e.Ticket, &e.Fence, &e.Session, &e.Count, &e.TimeoutMS, &e.Sealed); err != nil {
			rows.Close()
			return 0, 0, err
		}
		q = append(q, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, err
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

// hook calls the test hook, if set, at a named point.
func (s *driverStore) hook(point string) {
	if f := s.testHook.Load(); f != nil {
		(*f)(point)
	}
}
