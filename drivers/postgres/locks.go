package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cosid-go/store/driver"
)

var _ driver.Locker = (*Store)(nil)

// Lock joins name's queue with a ticket (its fence) and waits, if wait,
// until it is the head. It wakes on a notification naming its ticket, or
// when a session ahead of it can have expired.
func (s *Store) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	se, err := s.locks.get(ctx)
	if err != nil {
		return nil, err
	}
	floor := s.seenTicket()
	ticket, err := s.enqueue(ctx, se, name, owner, wait)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23503" {
			// The session row is gone: expired or purged.
			se.lose()
			return nil, fmt.Errorf("lock session expired while joining the queue: %w", driver.ErrLeaseLost)
		}
		if !errors.Is(err, driver.ErrLocked) && !errors.Is(err, driver.ErrCorrupt) {
			// The row may have been written: the session's rows go.
			s.locks.fail(se)
		}
		return nil, err
	}
	if ticket <= floor {
		s.locks.fail(se)
		return nil, fmt.Errorf("lock ticket %d is not above %d, seen earlier by this store: the database went back (restored from a backup, or a replica promoted without the last commits): %w",
			ticket, floor, driver.ErrCorrupt)
	}
	s.sawTicket(ticket)
	wake := se.watch(ticket)
	defer se.unwatch(ticket)
	for {
		granted, wait, err := s.pass(ctx, se, name, ticket)
		if err != nil {
			return nil, s.abandon(se, name, ticket, err)
		}
		if granted {
			return &hold{s: s, se: se, name: name, ticket: ticket}, nil
		}
		timer := time.NewTimer(wait)
		select {
		case <-wake:
		case <-timer.C:
		case <-ctx.Done():
			err = ctx.Err()
		case <-se.lost:
			err = fmt.Errorf("lock session lost while waiting: %w", driver.ErrLeaseLost)
		case <-s.locks.done:
			err = driver.ErrClosed
		}
		timer.Stop()
		if err != nil {
			return nil, s.abandon(se, name, ticket, err)
		}
	}
}

// enqueue writes the waiter row; without wait only if nobody holds or
// waits. The name's row is locked, so tickets of a name commit in order.
func (s *Store) enqueue(ctx context.Context, se *session, name, owner string, wait bool) (int64, error) {
	var ticket int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.Q(qLockName), name); err != nil {
			return err
		}
		if !wait {
			var holder string
			var fence int64
			err := tx.QueryRow(ctx, s.Q(qLockHead), name).Scan(&holder, &fence)
			if err == nil {
				return fmt.Errorf("held by %s with fence %d: %w", holder, fence, driver.ErrLocked)
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		return tx.QueryRow(ctx, s.Q(qEnqueue), name, owner, se.id).Scan(&ticket)
	})
	return ticket, err
}

// pass looks at the queue up to ticket: granted when it is the head, else
// how long until a session ahead could have expired.
func (s *Store) pass(ctx context.Context, se *session, name string, ticket int64) (bool, time.Duration, error) {
	s.passes.Add(1)
	rows, err := s.pool.Query(ctx, s.Q(qPass), name, ticket)
	if err != nil {
		return false, 0, err
	}
	defer rows.Close()
	first, mine := true, false
	var head bool
	soonest := int64(-1)
	for rows.Next() {
		var t, left int64
		if err := rows.Scan(&t, &left); err != nil {
			return false, 0, err
		}
		if t == ticket {
			mine, head = true, first
			continue
		}
		first = false
		if soonest < 0 || left < soonest {
			soonest = left
		}
	}
	if err := rows.Err(); err != nil {
		return false, 0, err
	}
	if !mine {
		se.lose()
		return false, 0, fmt.Errorf("the lock's queue no longer has ticket %d (its session expired): %w", ticket, driver.ErrLeaseLost)
	}
	if head {
		return true, 0, nil
	}
	return false, time.Duration(soonest)*time.Millisecond + 20*time.Millisecond, nil
}

// abandon removes a waiter that gives up, on a context of its own (the
// caller's may have ended), and returns why it gave up. A removal that
// fails gives up the whole session, whose rows then expire.
func (s *Store) abandon(se *session, name string, ticket int64, why error) error {
	if se.isLost() {
		return why
	}
	ctx, cancel := context.WithTimeout(context.Background(), se.t)
	defer cancel()
	if _, err := s.leave(ctx, se, name, ticket); err != nil {
		s.locks.fail(se)
	}
	return why
}

// leave deletes the ticket's row and wakes the next head, in one round
// trip; it reports whether the row was there.
func (s *Store) leave(ctx context.Context, se *session, name string, ticket int64) (bool, error) {
	b := &pgx.Batch{}
	b.Queue(s.Q(qLockNameRow), name)
	b.Queue(s.Q(qLeave), ticket, se.id, s.locks.channel)
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
func (s *Store) Locks(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, s.Q(qLocks))
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

// Waiters lists the live holder and waiters of name, in ticket order.
func (s *Store) Waiters(ctx context.Context, name string) ([]driver.Waiter, error) {
	var exists bool
	if err := s.pool.QueryRow(ctx, s.Q(qLockRow), name).Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return nil, fmt.Errorf("no lock %q: %w", name, driver.ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, s.Q(qWaiters), name)
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
	s      *Store
	se     *session
	name   string
	ticket int64

	mu       sync.Mutex
	unlocked bool
}

func (h *hold) Fence() int64          { return h.ticket }
func (h *hold) Lost() <-chan struct{} { return h.se.lost }

// Unlock deletes this hold's row only, whatever ctx says: a hold left
// behind would block everyone until its session expires.
func (h *hold) Unlock(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.unlocked {
		return nil
	}
	if h.se.isLost() {
		h.unlocked = true
		return fmt.Errorf("lock session lost while held: %w", driver.ErrLeaseLost)
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.se.t)
	defer cancel()
	found, err := h.s.leave(uctx, h.se, h.name, h.ticket)
	if err != nil {
		h.s.locks.fail(h.se)
		h.unlocked = true
		return fmt.Errorf("unlock: %v; the lock session is given up, so the hold ends when it expires: %w", err, driver.ErrLeaseLost)
	}
	h.unlocked = true
	if !found {
		return fmt.Errorf("the hold's row was gone: %w", driver.ErrLeaseLost)
	}
	return nil
}
