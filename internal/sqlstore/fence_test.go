package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
)

// An Acquire whose transaction the database aborts after the slot's new
// term was written (at its commit here) leaves the slot's fence where it
// was: the store must not remember the fence before it is committed. It
// used to, from the write on, so that a read of the slot meanwhile (a
// Release, a listing: on PostgreSQL from another connection, seeing the
// committed row) or after the abort called the database gone back
// (ErrCorrupt), as a fleet acquiring at once on PostgreSQL saw.
func TestAbortedAcquireFence(t *testing.T) {
	for _, db := range databases(t) {
		t.Run(db.name, func(t *testing.T) {
			ctx := t.Context()
			ab := &aborting{DB: db.db}
			s, err := sqlstore.Open(ctx, ab, db.d)
			if err != nil {
				t.Fatal(err)
			}
			ns := driver.Namespace{Name: "w", Limit: 4, Tolerance: time.Second}
			req := func(owner string) driver.AcquireRequest {
				return driver.AcquireRequest{Namespace: ns, Owner: owner, Incarnation: "1", TTL: time.Minute}
			}
			l, err := s.Acquire(ctx, req("a"))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Release(ctx, l, -1); err != nil {
				t.Fatal(err)
			}
			check := func(when string) {
				t.Helper()
				slots, err := s.Slots(ctx, ns.Name)
				if err != nil {
					t.Errorf("Slots %s: %v", when, err)
				} else if len(slots) != 1 || slots[0].Fence != l.Fence {
					t.Errorf("Slots %s = %+v; want slot %d at fence %d", when, slots, l.Slot, l.Fence)
				}
			}
			ab.beforeCommit = func() error {
				// SQLite's one connection is this transaction's.
				if db.name == "postgres" {
					check("while an Acquire's new term is not committed")
				}
				return errAborted
			}
			if l2, err := s.Acquire(ctx, req("b")); !errors.Is(err, errAborted) {
				t.Fatalf("Acquire aborted at its commit = %v, %v; want the abort", l2, err)
			}
			ab.beforeCommit = nil
			check("after an aborted Acquire")
			l3, err := s.Acquire(ctx, req("b"))
			if err != nil {
				t.Fatalf("Acquire again after an aborted one: %v", err)
			}
			if l3.Slot != l.Slot || l3.Fence != l.Fence+1 {
				t.Errorf("Acquire again = slot %d fence %d; want slot %d fence %d", l3.Slot, l3.Fence, l.Slot, l.Fence+1)
			}
		})
	}
}

var errAborted = errors.New("test: transaction aborted")

// aborting runs beforeCommit, if set, after a transaction's statements;
// its error rolls the transaction back, as the database aborting it would.
type aborting struct {
	sqlstore.DB
	beforeCommit func() error
}

func (a *aborting) Tx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	return a.DB.Tx(ctx, func(tx sqlstore.Querier) error {
		if err := fn(tx); err != nil || a.beforeCommit == nil {
			return err
		}
		return a.beforeCommit()
	})
}

// A slot_fence_floor that is no fence (written by hand, or damaged) is
// ErrCorrupt, never read as 0: a purge's floor guessed low would start a
// slot's fences again below the ones it purged.
func TestCorruptFenceFloor(t *testing.T) {
	eachStore(t, func(t *testing.T, db database, s *sqlstore.Store) {
		ctx := t.Context()
		ns := driver.Namespace{Name: "w", Limit: 4, Tolerance: time.Second}
		for _, v := range []string{"-3", "seven", ""} {
			if err := db.exec(ctx, `INSERT INTO {p}cosid_meta (name, value) VALUES ('slot_fence_floor', $1)
				ON CONFLICT (name) DO UPDATE SET value = $1`, v); err != nil {
				t.Fatal(err)
			}
			l, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "1", TTL: time.Minute})
			if !errors.Is(err, driver.ErrCorrupt) {
				t.Errorf("Acquire under slot_fence_floor %q = slot %d fence %d, %v; want ErrCorrupt", v, l.Slot, l.Fence, err)
			}
		}
	})
}
