package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
	"github.com/cosid-go/store/internal/testing/poll"
)

// A slot row deleted by hand under a live term is not taken as never
// used: on tables made by this version, and on tables of version 2 (made
// before cosid_slot_used existed) once this code opens them, with
// create=true (Open) and create=false (OpenExisting). The holder's Renew
// gives ErrLeaseLost; another Acquire, a SeedSlot of the slot and a
// namespace whose row goes too give ErrCorrupt.
func TestDeletedSlotRow(t *testing.T) {
	for _, from := range []string{"new", "version 2 by Open", "version 2 by OpenExisting"} {
		for _, db := range databases(t) {
			t.Run(from+"/"+db.name, func(t *testing.T) {
				ctx := t.Context()
				s, err := sqlstore.Open(ctx, db.db, db.d)
				if err != nil {
					t.Fatal(err)
				}
				ns := driver.Namespace{Name: "w", Limit: 2, Tolerance: time.Second}
				live := acquire(t, s, ns, "a")
				if from != "new" {
					// The tables as version 2 made them: no record of use.
					mustExec(t, db, `DROP TABLE {p}cosid_slot_used`)
					mustExec(t, db, `UPDATE {p}cosid_meta SET value = '2' WHERE name = 'schema_version'`)
					open := sqlstore.Open
					if from == "version 2 by OpenExisting" {
						open = sqlstore.OpenExisting
					}
					if s, err = open(ctx, db.db, db.d); err != nil {
						t.Fatalf("open tables of version 2: %v", err)
					}
					var v string
					if err := db.db.QueryRow(ctx, db.d.Rewrite(`SELECT value FROM {p}cosid_meta WHERE name = 'schema_version'`)).Scan(&v); err != nil || v != "3" {
						t.Fatalf("schema_version after the upgrade: %q, %v; want 3", v, err)
					}
				}
				mustExec(t, db, `DELETE FROM {p}cosid_slot WHERE namespace = 'w' AND slot = $1`, live.Slot)
				other := driver.AcquireRequest{Namespace: ns, Owner: "b", Incarnation: "1", TTL: time.Minute, Preferred: live.Slot}
				if l, err := s.Acquire(ctx, other); !errors.Is(err, driver.ErrCorrupt) {
					t.Errorf("Acquire of the slot whose row was deleted by hand: slot %d fence %d floor %d, %v; want ErrCorrupt",
						l.Slot, l.Fence, l.Floor, err)
				}
				if err := s.SeedSlot(ctx, ns, live.Slot, 5, 0); !errors.Is(err, driver.ErrCorrupt) {
					t.Errorf("SeedSlot of the slot whose row was deleted by hand: %v; want ErrCorrupt", err)
				}
				if _, err := s.Renew(ctx, live); !errors.Is(err, driver.ErrLeaseLost) {
					t.Errorf("Renew of the term whose row was deleted by hand: %v; want ErrLeaseLost", err)
				}
				// The namespace's row and every slot row gone: the record
				// still tells.
				mustExec(t, db, `DELETE FROM {p}cosid_slot`)
				mustExec(t, db, `DELETE FROM {p}cosid_namespace`)
				if l, err := s.Acquire(ctx, other); !errors.Is(err, driver.ErrCorrupt) {
					t.Errorf("Acquire once the namespace's rows were deleted by hand: slot %d fence %d, %v; want ErrCorrupt", l.Slot, l.Fence, err)
				}
			})
		}
	}
}

// A purge deletes the records of use with the slots: the namespace is
// used again, each slot above the fences purged (slot_fence_floor).
func TestPurgeThenSlotsAgain(t *testing.T) {
	eachStore(t, func(t *testing.T, db database, s *sqlstore.Store) {
		ctx := t.Context()
		ns := driver.Namespace{Name: "w", Limit: 2, Tolerance: time.Second}
		var top int64
		for _, owner := range []string{"a", "b"} {
			l := acquire(t, s, ns, owner)
			top = max(top, l.Fence)
			if err := s.Release(ctx, l, l.Floor); err != nil {
				t.Fatal(err)
			}
		}
		// The released terms' next floor may be a millisecond ahead of
		// the clock: a purge is refused (ErrLocked) until it passes.
		poll.Succeeds(t, 10*time.Second, "purge", func() error {
			_, err := s.Purge(ctx)
			return err
		})
		for _, owner := range []string{"c", "d"} {
			l := acquire(t, s, ns, owner)
			if l.Fence <= top {
				t.Errorf("slot %d after the purge has fence %d, not above %d purged", l.Slot, l.Fence, top)
			}
		}
	})
}

// A purge of one term at fence 1, the lowest there is, still leaves a
// floor: the slot's next term is at fence 2. A mutant that read a missing
// floor as 1 kept none (make mutants-sqlstore).
func TestPurgeOfTheFirstFence(t *testing.T) {
	for _, db := range databases(t) {
		t.Run(db.name, func(t *testing.T) {
			ctx := t.Context()
			s, err := sqlstore.Open(ctx, db.db, db.d)
			if err != nil {
				t.Fatal(err)
			}
			ns := driver.Namespace{Name: "w", Limit: 1, Tolerance: time.Second}
			l := acquire(t, s, ns, "a")
			if err := s.Release(ctx, l, l.Floor); err != nil {
				t.Fatal(err)
			}
			poll.Succeeds(t, 10*time.Second, "purge", func() error {
				_, err := s.Purge(ctx)
				return err
			})
			if l2 := acquire(t, s, ns, "b"); l2.Fence <= l.Fence {
				t.Errorf("slot %d after the purge of fence %d has fence %d", l2.Slot, l.Fence, l2.Fence)
			}
		})
	}
}

func acquire(t *testing.T, s *sqlstore.Store, ns driver.Namespace, owner string) driver.Lease {
	t.Helper()
	l, err := s.Acquire(t.Context(), driver.AcquireRequest{Namespace: ns, Owner: owner, Incarnation: "1", TTL: time.Minute})
	if err != nil {
		t.Fatalf("Acquire for %s: %v", owner, err)
	}
	return l
}

func mustExec(t *testing.T, db database, q string, args ...any) {
	t.Helper()
	if err := db.exec(context.Background(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
