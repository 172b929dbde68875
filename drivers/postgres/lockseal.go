package postgres

import (
	"context"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
	"github.com/jackc/pgx/v5"
)

var _ driver.LockSealer = (*driverStore)(nil)

// SealLocks writes the seal row (driver.LockSealer) with cosid_lock locked,
// so no enqueue is in flight: each one before has its ticket, each one
// after reads the seal. Tickets are the fences, from one sequence, so its
// last value is the floor of every name. The waiters are woken to find the
// seal (pass).
func (s *driverStore) SealLocks(ctx context.Context) (int64, error) {
	var floor int64
	err := pgx.BeginTxFunc(ctx, s.pool, beginBounded(s.cfg.LockTimeout), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.lq.PurgeLockTables); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.lq.SealLocks); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.lq.SealWake, s.locks.channel); err != nil {
			return err
		}
		return tx.QueryRow(ctx, s.lq.TicketLast).Scan(&floor)
	})
	if err != nil {
		return 0, s.unavailable(err)
	}
	return floor, nil
}

// RaiseLockFences moves the ticket sequence up to floor (setval: the next
// ticket is above it), past the fences it gives the waiters queued before
// if one was at or below floor (sqlstore.RaiseShift), and removes the seal, with cosid_lock locked, so
// that no enqueue takes a ticket between the read and the setval. Undoing
// a seal, it notes the last ticket in locks_unsealed: no waiter queues
// while sealed, so the waiters at or below it were queued before the seal
// and are never granted (a pass refuses them), even if none looked at the
// seal before this raise.
//
// A seal or raise whose answer was lost cannot be applied after the
// other: each holds cosid_lock's table lock from its first statement to
// its commit, so only its commit can be late, and the other waits for it.
func (s *driverStore) RaiseLockFences(ctx context.Context, floor int64) error {
	err := pgx.BeginTxFunc(ctx, s.pool, beginBounded(s.cfg.LockTimeout), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.lq.PurgeLockTables); err != nil {
			return err
		}
		var last int64
		if err := tx.QueryRow(ctx, s.lq.TicketLast).Scan(&last); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.lq.MarkUnsealed, last); err != nil {
			return err
		}
		var lowest, raisedLast, offset int64
		if err := tx.QueryRow(ctx, s.lq.RaiseState).Scan(&lowest, &raisedLast, &offset); err != nil {
			return err
		}
		raisedLast, offset, target, shift, err := sqlstore.RaiseShift(floor, last, raisedLast, offset, lowest)
		if err != nil {
			return err
		}
		if shift {
			if _, err := tx.Exec(ctx, s.lq.RaiseRecord, raisedLast, offset); err != nil {
				return err
			}
		}
		if target > last {
			if _, err := tx.Exec(ctx, s.lq.RaiseTicket, target); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, s.lq.Unseal)
		return err
	})
	return s.unavailable(err)
}

// LocksSealed reads the seal row.
func (s *driverStore) LocksSealed(ctx context.Context) (bool, error) {
	var sealed bool
	if err := s.pool.QueryRow(ctx, s.lq.LocksSealed).Scan(&sealed); err != nil {
		return false, s.unavailable(err)
	}
	return sealed, nil
}
