package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
)

var (
	_ driver.Locker    = (*driverStore)(nil)
	_ driver.LostCause = (*sqlstore.Hold[*session])(nil)
)

// Lock joins name's queue and waits, if wait, until it is the head
// (sqlstore.Sessions.Lock). A waiter wakes on a notification naming its
// ticket, or when a session ahead of it may be taken over.
func (s *driverStore) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	return s.locks.Lock(ctx, name, owner, wait)
}

// enqueue writes the waiter row; without wait only if nobody holds or
// waits. The name's row is locked, so tickets of a name commit in order.
// It returns the ticket once known, also with an error: the row may then
// have been written. A transaction the server aborted (a lock wait past
// lock_timeout, a deadlock) is tried again within ctx.
func (s *driverStore) enqueue(ctx context.Context, se *session, name, owner string, wait bool) (int64, error) {
	floor := s.locks.Tickets().Seen()
	for {
		ticket, err := s.enqueueOnce(ctx, se, name, owner, wait, floor)
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

func (s *driverStore) enqueueOnce(ctx context.Context, se *session, name, owner string, wait bool, floor int64) (int64, error) {
	var ticket int64
	err := retryAborted(ctx, func() error {
		return pgx.BeginTxFunc(ctx, s.pool, beginBounded(s.cfg.LockTimeout), func(tx pgx.Tx) error {
			var next *int64 // nil: the sequence went back (nextAbove)
			if err := tx.QueryRow(ctx, s.lq.LockName, name, floor).Scan(&next); err != nil {
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
			if next == nil {
				return wentBack(floor)
			}
			t := *next
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
				var head int64 // the holder's ticket: its fence is this, or above after a raise
				err := tx.QueryRow(ctx, s.lq.LockHead, name).Scan(&holder, &head)
				if err == nil {
					return fmt.Errorf("held by %s (queue ticket %d): %w", holder, head, driver.ErrLocked)
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
func (s *driverStore) pass(ctx context.Context, se *session, name string, ticket int64) (int64, time.Duration, error) {
	s.hook("pass")
	rows, err := s.pool.Query(ctx, s.lq.Pass, name, ticket)
	if err != nil {
		return 0, 0, err
	}
	q, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (e sqlstore.QueueEntry, err error) {
		err = row.Scan(&e.Ticket, &e.Fence, &e.Session, &e.Count, &e.TimeoutMS, &e.Sealed)
		return e, err
	})
	if err != nil {
		return 0, 0, err
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

// leave deletes the ticket's row, with the name's row locked first, and
// wakes the next head, in one round trip; it reports whether the row was
// there. The ticket came from the enqueue's transaction, which holds the
// name's row lock, so a removal waits for an enqueue still in flight. A
// deadlock or lock_timeout abort rolled the whole batch back (the row is
// still there): it is tried again within ctx.
func (s *driverStore) leave(ctx context.Context, se *session, name string, ticket int64) (bool, error) {
	var found bool
	err := retryAborted(ctx, func() error {
		b := &pgx.Batch{}
		b.Queue(s.lq.LockNameRow, name)
		b.Queue(s.lq.Leave, ticket, se.id, s.locks.channel)
		var err error
		found, err = countSecond(s.pool.SendBatch(ctx, b))
		return err
	})
	return found, err
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

// wentBack is the error of a ticket or session id refused because the
// ticket sequence is behind a value this store saw.
func wentBack(floor int64) error {
	return fmt.Errorf("the lock ticket sequence is not above %d, a ticket or session id this store saw: the database went back (restored from a backup, or a replica promoted without the last commits): %w",
		floor, driver.ErrCorrupt)
}
