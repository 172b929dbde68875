package sqlstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
	"github.com/cosid-go/store/internal/testing/poll"
)

// A slot row written back from a copy taken during the term it still
// holds (same fence, lower ceiling), after that term was renewed and
// released with timestamps above the copy's ceiling, under a running
// store that saw the whole term: the store must not start the next term
// with a floor at or below what the released term issued (ErrCorrupt is
// fine). The fence alone does not tell: it is the same (the ZooKeeper
// driver's TestWrittenBack, released and renewed terms written back).
// Holds for SQLite, PostgreSQL and MySQL: the guard remembers fences only.
func TestWrittenBackSameFence(t *testing.T) {
	eachStore(t, func(t *testing.T, db database, s *sqlstore.Store) {
		ctx := t.Context()
		ns := driver.Namespace{Name: "w", Limit: 1, Tolerance: time.Millisecond}
		req := driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "1", TTL: 300 * time.Millisecond}
		live, err := s.Acquire(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, db, `CREATE TABLE {p}snap AS SELECT * FROM {p}cosid_slot`)
		// Renew until the term may issue a timestamp above the copy's ceiling.
		renewed := live
		poll.Succeeds(t, 10*time.Second, "a renewal past the copy's ceiling", func() error {
			if renewed, err = s.Renew(ctx, renewed); err != nil {
				t.Fatal(err)
			}
			if renewed.ExpiresAt-1 < live.Ceiling {
				return errors.New("not yet")
			}
			return nil
		})
		used := renewed.ExpiresAt - 1
		if err := s.Release(ctx, renewed, used); err != nil {
			t.Fatal(err)
		}
		// The copy written back: the term at the same fence, live, its
		// ceiling the one it had when copied.
		mustExec(t, db, `DELETE FROM {p}cosid_slot`)
		mustExec(t, db, `INSERT INTO {p}cosid_slot SELECT * FROM {p}snap`)
		// Another owner takes the slot once the copy's term expires.
		var l driver.Lease
		poll.Succeeds(t, 10*time.Second, "the copy's term to expire", func() error {
			l, err = s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "b", Incarnation: "1", TTL: time.Minute})
			if errors.Is(err, driver.ErrExhausted) && !errors.Is(err, driver.ErrCorrupt) {
				return err
			}
			return nil
		})
		switch {
		case errors.Is(err, driver.ErrCorrupt):
			t.Logf("Acquire after the write-back: %v", err)
		case err != nil:
			t.Fatalf("Acquire after the write-back: %v; want a lease or ErrCorrupt", err)
		case l.Floor <= used:
			t.Errorf("after a write-back of slot %d (fence %d, ceiling %d then), the store that saw its term released with "+
				"used %d gave fence %d with floor %d: timestamps %d..%d again under one worker ID",
				l.Slot, live.Fence, live.Ceiling, used, l.Fence, l.Floor, l.Floor, used)
		}
	})
}
