package mysql

import (
	"context"
	"strconv"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
)

var _ driver.LockSealer = (*driverStore)(nil)

// SealLocks sets the seal on the state row (driver.LockSealer). Every
// enqueue updates that row before it reads the seal and holds it until it
// commits, so none is in flight meanwhile: each one before has its
// ticket, each one after reads the seal. Tickets are the fences, from the
// row's one counter, so its value is the floor of every name. Waiters find
// the seal at their next look (pass).
func (s *driverStore) SealLocks(ctx context.Context) (int64, error) {
	var floor int64
	err := s.db.retry(ctx, func() error {
		tx, err := s.pool.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, s.lq.SealLocks); err != nil {
			return err
		}
		var sealed bool
		if err := tx.QueryRowContext(ctx, s.lq.StateRead).Scan(&floor, &sealed); err != nil {
			return err
		}
		return commit(ctx, tx)
	})
	if err != nil {
		return 0, s.health.Unavailable(err)
	}
	return floor, nil
}

// RaiseLockFences moves the counter up to floor (the next ticket is above
// it), past the fences it gives the waiters queued before if one was at
// or below floor (sqlstore.RaiseShift), and removes the seal, with the state row locked, so that no enqueue
// takes a ticket in between. Undoing a seal, it notes the last ticket in
// unsealed: no waiter queues while sealed, so the waiters at or below it
// were queued before the seal and are never granted (a pass refuses
// them), even if none looked at the seal before this raise.
//
// A seal or raise whose answer was lost cannot be applied after the
// other: each holds the state row's lock from its first statement to its
// commit, so only its commit can be late, and the other waits for it (or
// for the server to end the silent transaction, idle_transaction_timeout).
func (s *driverStore) RaiseLockFences(ctx context.Context, floor int64) error {
	err := s.db.retry(ctx, func() error {
		tx, err := s.pool.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var ticket int64
		var sealed bool
		if err := tx.QueryRowContext(ctx, s.lq.StateLock).Scan(&ticket, &sealed); err != nil {
			return err
		}
		var lowest, raisedLast, offset int64
		if err := tx.QueryRowContext(ctx, s.lq.RaiseState).Scan(&lowest, &raisedLast, &offset); err != nil {
			return err
		}
		raisedLast, offset, target, shift, err := sqlstore.RaiseShift(floor, ticket, raisedLast, offset, lowest)
		if err != nil {
			return err
		}
		if shift {
			for _, kv := range []struct {
				name  string
				value int64
			}{{sqlstore.RaisedLast, raisedLast}, {sqlstore.RaisedOffset, offset}} {
				v := strconv.FormatInt(kv.value, 10)
				if _, err := tx.ExecContext(ctx, s.lq.RaiseRecord, kv.name, v, v); err != nil {
					return err
				}
			}
		}
		if _, err := tx.ExecContext(ctx, s.lq.RaiseLockFences, target); err != nil {
			return err
		}
		return commit(ctx, tx)
	})
	return s.health.Unavailable(err)
}

// LocksSealed reads the seal.
func (s *driverStore) LocksSealed(ctx context.Context) (bool, error) {
	var ticket int64
	var sealed bool
	if err := s.pool.QueryRowContext(ctx, s.lq.StateRead).Scan(&ticket, &sealed); err != nil {
		return false, s.health.Unavailable(err)
	}
	return sealed, nil
}
