package sqlstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
)

// A range row written back from a copy taken before the key was sealed
// (same next value, unsealed), under a running store that sealed it: the
// store must not hand out values past the seal, which the store the key
// moved to hands out too (ErrSealed or ErrCorrupt). The next value alone
// does not tell: it is the same (the ZooKeeper driver's TestWrittenBack,
// a sealed key written back unsealed).
func TestWrittenBackUnsealed(t *testing.T) {
	eachStore(t, func(t *testing.T, db database, s *sqlstore.Store) {
		ctx := t.Context()
		if _, err := s.Next(ctx, "k", 10); err != nil {
			t.Fatal(err)
		}
		mustExec(t, db, `CREATE TABLE {p}snap AS SELECT * FROM {p}cosid_range`)
		sealed, err := s.Seal(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, db, `DELETE FROM {p}cosid_range`)
		mustExec(t, db, `INSERT INTO {p}cosid_range SELECT * FROM {p}snap`)
		start, err := s.Next(ctx, "k", 10)
		switch {
		case errors.Is(err, driver.ErrSealed), errors.Is(err, driver.ErrCorrupt):
			t.Logf("Next after the write-back: %v", err)
		case err != nil:
			t.Fatalf("Next after the write-back: %v; want ErrSealed or ErrCorrupt", err)
		default:
			t.Errorf("the store that sealed key k at %d handed out [%d, %d) once a copy from before the seal was written back: "+
				"the store the key moved to starts at %d", sealed, start, start+10, sealed)
		}
	})
}

// A namespace row written back from a copy taken before the namespace was
// sealed (moved to another store), under the running store that sealed
// it: that store must not start terms in it (ErrSealed or ErrCorrupt),
// or two holders in two stores use one worker ID.
func TestWrittenBackUnsealedNamespace(t *testing.T) {
	eachStore(t, func(t *testing.T, db database, s *sqlstore.Store) {
		ctx := t.Context()
		ns := driver.Namespace{Name: "w", Limit: 1, Tolerance: time.Millisecond}
		l, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "1", TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, l, -1); err != nil {
			t.Fatal(err)
		}
		mustExec(t, db, `CREATE TABLE {p}snap AS SELECT * FROM {p}cosid_namespace`)
		if err := s.SealNamespace(ctx, ns.Name); err != nil {
			t.Fatal(err)
		}
		mustExec(t, db, `DELETE FROM {p}cosid_namespace`)
		mustExec(t, db, `INSERT INTO {p}cosid_namespace SELECT * FROM {p}snap`)
		got, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "b", Incarnation: "1", TTL: time.Minute})
		switch {
		case errors.Is(err, driver.ErrSealed), errors.Is(err, driver.ErrCorrupt):
			t.Logf("Acquire after the write-back: %v", err)
		case err != nil:
			t.Fatalf("Acquire after the write-back: %v; want ErrSealed or ErrCorrupt", err)
		default:
			t.Errorf("the store that sealed namespace %s started a term in it once a copy from before the seal was "+
				"written back: slot %d fence %d", ns.Name, got.Slot, got.Fence)
		}
	})
}

// A namespace row deleted by hand while its slots remain is not created
// afresh, even by a store that never saw the namespace: the seal the row
// may have carried is gone, so Acquire and SeedSlot give ErrCorrupt
// (docs/design.md, Slot leases). So too when the slots' rows went with it
// and only their records of use (cosid_slot_used) are left.
func TestDeletedNamespaceRow(t *testing.T) {
	for _, deleted := range [][]string{{"cosid_namespace"}, {"cosid_namespace", "cosid_slot"}} {
		t.Run(strings.Join(deleted, "+"), func(t *testing.T) {
			eachStore(t, func(t *testing.T, db database, s *sqlstore.Store) {
				ctx := t.Context()
				ns := driver.Namespace{Name: "w", Limit: 2, Tolerance: time.Millisecond}
				if _, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "1", TTL: time.Minute}); err != nil {
					t.Fatal(err)
				}
				if err := s.SealNamespace(ctx, ns.Name); err != nil {
					t.Fatal(err)
				}
				for _, table := range deleted {
					mustExec(t, db, `DELETE FROM {p}`+table)
				}
				fresh, err := sqlstore.Open(ctx, db.db, db.d)
				if err != nil {
					t.Fatal(err)
				}
				got, err := fresh.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "b", Incarnation: "1", TTL: time.Minute})
				if !errors.Is(err, driver.ErrCorrupt) {
					t.Errorf("Acquire in namespace %s, sealed, then its rows in %v deleted by hand: slot %d fence %d, %v; want ErrCorrupt",
						ns.Name, deleted, got.Slot, got.Fence, err)
				}
				// Slot 1 was never used: only the namespace's guard refuses it.
				if err := fresh.SeedSlot(ctx, ns, 1, 5, 5); !errors.Is(err, driver.ErrCorrupt) {
					t.Errorf("SeedSlot in namespace %s, sealed, then its rows in %v deleted by hand: %v; want ErrCorrupt", ns.Name, deleted, err)
				}
			})
		})
	}
}

// An operation that found no namespace row, while another store created
// the row and took a slot of it before this one creates it, goes on: the
// row is there beside the slot (a fleet starting at once on a new
// namespace), not missing beside it (deleted by hand, ErrCorrupt).
func TestNamespaceCreatedMeanwhile(t *testing.T) {
	for _, db := range databases(t) {
		t.Run(db.name, func(t *testing.T) {
			ctx := t.Context()
			ns := driver.Namespace{Name: "w", Limit: 4, Tolerance: time.Second}
			req := func(owner string) driver.AcquireRequest {
				return driver.AcquireRequest{Namespace: ns, Owner: owner, Incarnation: "1", TTL: time.Minute}
			}
			other, err := sqlstore.Open(ctx, db.db, db.d)
			if err != nil {
				t.Fatal(err)
			}
			var took driver.Lease
			tookErr := errors.New("no operation found the namespace row missing")
			s, err := sqlstore.Open(ctx, &afterNoNamespace{DB: db.db, f: func() { took, tookErr = other.Acquire(ctx, req("other")) }}, db.d)
			if err != nil {
				t.Fatal(err)
			}
			l, err := s.Acquire(ctx, req("s"))
			if tookErr != nil {
				t.Fatalf("the other store's Acquire, between the first look and the creation: %v", tookErr)
			}
			if err != nil || l.Slot == took.Slot {
				t.Errorf("Acquire whose namespace another store created meanwhile, taking slot %d: slot %d, %v; want another slot",
					took.Slot, l.Slot, err)
			}
		})
	}
}

// afterNoNamespace runs f, once, after the first transaction that found
// no namespace row, before the row is created.
type afterNoNamespace struct {
	sqlstore.DB
	once sync.Once
	f    func()
}

func (a *afterNoNamespace) Tx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	err := a.DB.Tx(ctx, fn)
	if errors.Is(err, sqlstore.ErrNoNamespace) {
		a.once.Do(a.f)
	}
	return err
}
