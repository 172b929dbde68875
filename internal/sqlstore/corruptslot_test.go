package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
)

// A slot whose row does not check (its stored expiry edited by hand to
// say free under a live term) is passed over by Acquire and named in
// its ErrExhausted (driver.SlotLeaseStore.Acquire), never taken and never
// refusing the whole namespace: whether the acquire meets it as its
// preferred slot, as its own last slot, or first in the search
// statement's order. Nothing is written to the corrupt row.
func TestCorruptSlotPassedOver(t *testing.T) {
	eachStore(t, func(t *testing.T, db database, s *sqlstore.Store) {
		ctx := t.Context()
		ns := driver.Namespace{Name: "w", Limit: 3, Tolerance: time.Second}
		a := acquire(t, s, ns, "a")
		b := acquire(t, s, ns, "b")
		mustExec(t, db, `UPDATE {p}cosid_slot SET expires_at = 0 WHERE namespace = 'w' AND slot = $1`, a.Slot)
		// An owner whose search starts at the corrupt slot: the search
		// statement finds that row first.
		owner := func(prefix string) string {
			for i := 0; ; i++ {
				o := fmt.Sprintf("%s%d", prefix, i)
				if driver.SearchStart(o, "1", ns.Limit) == a.Slot {
					return o
				}
			}
		}
		req := func(owner string, preferred int) driver.AcquireRequest {
			return driver.AcquireRequest{Namespace: ns, Owner: owner, Incarnation: "1", TTL: time.Minute, Preferred: preferred}
		}
		for _, r := range []driver.AcquireRequest{req(owner("p"), a.Slot), req(owner("s"), 0)} {
			l, err := s.Acquire(ctx, r)
			if err != nil || l.Slot == a.Slot || l.Slot == b.Slot {
				t.Fatalf("Acquire by %s (preferred %d) beside corrupt slot %d and held slot %d: slot %d, %v; want the third slot",
					r.Owner, r.Preferred, a.Slot, b.Slot, l.Slot, err)
			}
			if err := s.Release(ctx, l, 0); err != nil {
				t.Fatalf("Release of slot %d: %v", l.Slot, err)
			}
		}
		c := acquire(t, s, ns, "c")
		for _, r := range []driver.AcquireRequest{req(owner("d"), 0), req("a", 0), req("a", a.Slot)} {
			l, err := s.Acquire(ctx, r)
			want := fmt.Sprintf("slot w/%d: stored expires_at 0", a.Slot)
			if !errors.Is(err, driver.ErrExhausted) || !strings.Contains(err.Error(), want) {
				t.Errorf("Acquire by %s (preferred %d) with slots %d and %d held and %d corrupt: slot %d fence %d, %v; "+
					"want ErrExhausted naming %q", r.Owner, r.Preferred, b.Slot, c.Slot, a.Slot, l.Slot, l.Fence, err, want)
			}
		}
		var expires, fence int64
		q := db.d.Rewrite(`SELECT expires_at, fence FROM {p}cosid_slot WHERE namespace = 'w' AND slot = $1`)
		if err := db.db.QueryRow(ctx, q, a.Slot).Scan(&expires, &fence); err != nil || expires != 0 || fence != a.Fence {
			t.Errorf("corrupt slot %d's row after the acquires: expires_at %d, fence %d, %v; want 0 and %d, untouched",
				a.Slot, expires, fence, err, a.Fence)
		}
	})
}

// A slot row behind what this store saw still refuses the Acquire
// (ErrCorrupt, the database went back) when the row does not check
// either: passing it over as merely corrupt loses the regression guard.
// The case is a restore of a copy in which slot 0's row was already
// corrupt: slot 0 goes back from fence 2 to 1, and slot 1, created after
// the copy under b's live term, loses its row and its record of use. An
// Acquire that passed over slot 0 started slot 1 again at fence 1, b's
// live fence: two holders of one worker ID. Before the change the row
// failed the Acquire with ErrCorrupt.
func TestCorruptSlotBehindRefused(t *testing.T) {
	eachStore(t, func(t *testing.T, db database, s *sqlstore.Store) {
		ctx := t.Context()
		ns := driver.Namespace{Name: "w", Limit: 2, Tolerance: time.Second}
		a := secondTerm(t, s, ns)   // slot 0 (preferred), its first term's lease
		b := acquire(t, s, ns, "b") // the other slot, fence 1, live
		mustExec(t, db, `UPDATE {p}cosid_slot SET fence = $2, expires_at = 0 WHERE namespace = 'w' AND slot = $1`, a.Slot, a.Fence)
		mustExec(t, db, `DELETE FROM {p}cosid_slot WHERE namespace = 'w' AND slot = $1`, b.Slot)
		mustExec(t, db, `DELETE FROM {p}cosid_slot_used WHERE namespace = 'w' AND slot = $1`, b.Slot)
		req := driver.AcquireRequest{Namespace: ns, Owner: "c", Incarnation: "1", TTL: time.Minute, Preferred: a.Slot}
		l, err := s.Acquire(ctx, req)
		if !errors.Is(err, driver.ErrCorrupt) {
			t.Errorf("Acquire with slot %d's row back at fence %d (this store saw %d) and not checking: slot %d fence %d, %v; "+
				"want ErrCorrupt (b holds slot %d at fence %d)", a.Slot, a.Fence, a.Fence+1, l.Slot, l.Fence, err, b.Slot, b.Fence)
		}
	})
}

// A slot whose row and record of use are both gone (a restore of the
// whole tables from before the slot was made) is not started again at a
// fence the store saw: its Acquire gives ErrCorrupt, as for a row behind.
func TestSlotGoneWithItsRecordRefused(t *testing.T) {
	eachStore(t, func(t *testing.T, db database, s *sqlstore.Store) {
		ctx := t.Context()
		ns := driver.Namespace{Name: "w", Limit: 2, Tolerance: time.Second}
		a := acquire(t, s, ns, "a")
		b := acquire(t, s, ns, "b")
		mustExec(t, db, `DELETE FROM {p}cosid_slot WHERE namespace = 'w' AND slot = $1`, b.Slot)
		mustExec(t, db, `DELETE FROM {p}cosid_slot_used WHERE namespace = 'w' AND slot = $1`, b.Slot)
		req := driver.AcquireRequest{Namespace: ns, Owner: "c", Incarnation: "1", TTL: time.Minute, Preferred: -1}
		if l, err := s.Acquire(ctx, req); !errors.Is(err, driver.ErrCorrupt) {
			t.Errorf("Acquire with slot %d's row and record gone (this store saw fence %d; a holds slot %d): slot %d fence %d, %v; "+
				"want ErrCorrupt", b.Slot, b.Fence, a.Slot, l.Slot, l.Fence, err)
		}
	})
}

// A row behind what the store saw refuses the Acquire even when another
// slot is free: the database went back, so the row is not merely passed
// over as corrupt.
func TestCorruptSlotBehindRefusesTheFreeSlot(t *testing.T) {
	eachStore(t, func(t *testing.T, db database, s *sqlstore.Store) {
		ctx := t.Context()
		ns := driver.Namespace{Name: "w", Limit: 2, Tolerance: time.Second}
		a := secondTerm(t, s, ns)
		b := acquire(t, s, ns, "b")
		if err := s.Release(ctx, b, b.Floor); err != nil {
			t.Fatal(err)
		}
		mustExec(t, db, `UPDATE {p}cosid_slot SET fence = $2, expires_at = 0 WHERE namespace = 'w' AND slot = $1`, a.Slot, a.Fence)
		req := driver.AcquireRequest{Namespace: ns, Owner: "c", Incarnation: "1", TTL: time.Minute, Preferred: a.Slot}
		if l, err := s.Acquire(ctx, req); !errors.Is(err, driver.ErrCorrupt) {
			t.Errorf("Acquire with slot %d's row back at fence %d (this store saw %d), not checking, and slot %d free: "+
				"slot %d fence %d, %v; want ErrCorrupt", a.Slot, a.Fence, a.Fence+1, b.Slot, l.Slot, l.Fence, err)
		}
	})
}

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

// secondTerm has owner "a" take a slot, release it and take it again
// under another incarnation, so that the store saw it at fence 2; it
// returns the first term's lease (fence 1).
func secondTerm(t *testing.T, s *sqlstore.Store, ns driver.Namespace) driver.Lease {
	t.Helper()
	ctx := t.Context()
	a := acquire(t, s, ns, "a")
	if err := s.Release(ctx, a, a.Floor); err != nil {
		t.Fatal(err)
	}
	again := driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "2", TTL: time.Minute, Preferred: a.Slot}
	if a2, err := s.Acquire(ctx, again); err != nil || a2.Slot != a.Slot || a2.Fence != a.Fence+1 {
		t.Fatalf("Acquire of slot %d again: slot %d fence %d, %v; want fence %d", a.Slot, a2.Slot, a2.Fence, err, a.Fence+1)
	}
	return a
}
