package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
)

// A SeedSlot of a slot whose row does not check gives ErrCorrupt, as it
// did before Acquire learned to pass such a row over: the seed reads the
// slot through the acquire's reads, which now leave a corrupt row out, so
// the seed took the slot for one never used, its insert met the row, and
// it said "changed meanwhile; seed again", which storectl restore passes
// on to an operator who then runs it again to the same end.
func TestSeedCorruptSlotRefused(t *testing.T) {
	eachStore(t, func(t *testing.T, db database, s *sqlstore.Store) {
		ctx := t.Context()
		ns := driver.Namespace{Name: "w", Limit: 2, Tolerance: time.Second}
		a := acquire(t, s, ns, "a")
		if err := s.Release(ctx, a, a.Floor); err != nil {
			t.Fatal(err)
		}
		mustExec(t, db, `UPDATE {p}cosid_slot SET ceiling = 7 WHERE namespace = 'w' AND slot = $1`, a.Slot)
		if err := s.SeedSlot(ctx, ns, a.Slot, a.Fence+10, 0); !errors.Is(err, driver.ErrCorrupt) {
			t.Errorf("SeedSlot of slot %d, whose stored ceiling was edited by hand: %v; want ErrCorrupt", a.Slot, err)
		}
	})
}

// retryDB runs a transaction again while the database aborted it, as the
// drivers' DB.Tx does (sqlstore.RetryAborted), and says each abort on
// aborted (without blocking).
type retryDB struct {
	sqlstore.DB
	d       sqlstore.Dialect
	aborted chan struct{}
}

func (r retryDB) Tx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	return sqlstore.RetryAborted(ctx, func(err error) bool {
		if r.d.Kind(err) != sqlstore.Aborted {
			return false
		}
		select {
		case r.aborted <- struct{}{}:
		default:
		}
		return true
	}, func() error { return r.DB.Tx(ctx, fn) })
}

// An Acquire that meets a corrupt row does not give ErrExhausted while a
// free slot's row is only locked for a moment by another transaction
// (another acquirer holding its owner's slots, a Renew, a Release): the
// search statements' second pass takes such a lock NOWAIT and the
// transaction is tried again, but acquire.scan passed over every row
// locked at its one look (SKIP LOCKED) and called the namespace
// exhausted, which the caller takes as final. The row is held until the
// Acquire's transaction was aborted once, or the Acquire returned. The
// control, the same namespace with its other slot held rather than
// corrupt, gets the slot.
func TestCorruptSlotScanWaitsForLockedFreeSlot(t *testing.T) {
	db := postgresDB(t)
	ctx := t.Context()
	aborted := make(chan struct{}, 1)
	s, err := sqlstore.Open(ctx, retryDB{db.db, db.d, aborted}, db.d)
	if err != nil {
		t.Fatal(err)
	}
	pool := db.db.(pgDB).pool
	for _, corrupt := range []bool{false, true} {
		name := map[bool]string{false: "held", true: "corrupt"}[corrupt]
		t.Run(name, func(t *testing.T) {
			ns := driver.Namespace{Name: name, Limit: 2, Tolerance: time.Second}
			a := acquire(t, s, ns, "a")
			b := acquire(t, s, ns, "b")
			if err := s.Release(ctx, b, b.Floor); err != nil {
				t.Fatal(err)
			}
			if corrupt {
				mustExec(t, db, `UPDATE {p}cosid_slot SET expires_at = 0 WHERE namespace = $1 AND slot = $2`, ns.Name, a.Slot)
			}
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background())
			if _, err := tx.Exec(ctx, db.d.Rewrite(`SELECT slot FROM {p}cosid_slot WHERE namespace = $1 AND slot = $2 FOR UPDATE`), ns.Name, b.Slot); err != nil {
				t.Fatal(err)
			}
			select {
			case <-aborted: // an earlier abort
			default:
			}
			type result struct {
				l   driver.Lease
				err error
			}
			done := make(chan result, 1)
			go func() {
				l, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "c", Incarnation: "1", TTL: time.Minute, Preferred: -1})
				done <- result{l, err}
			}()
			var got result
			select {
			case got = <-done: // while free slot b's row was locked
				if err := tx.Rollback(ctx); err != nil {
					t.Fatal(err)
				}
			case <-aborted:
				if err := tx.Rollback(ctx); err != nil {
					t.Fatal(err)
				}
				got = <-done
			}
			if got.err != nil || got.l.Slot != b.Slot {
				t.Errorf("Acquire with slot %d %s and free slot %d's row locked for a moment: slot %d fence %d, %v; "+
					"want slot %d once the lock ends", a.Slot, name, b.Slot, got.l.Slot, got.l.Fence, got.err, b.Slot)
			}
		})
	}
}
