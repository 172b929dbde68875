package sqlstore_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
)

// An Acquire that finds no free row before the first slot never used in
// its search order (every Acquire of a fleet starting on a new namespace)
// runs no free-slot search, and on PostgreSQL creates the slot, its record
// of use and its owner's index in one statement: each statement is a wait
// for the server, and a fleet's acquires wait behind each other's.
func TestNewSlotStatements(t *testing.T) {
	// The namespace read, the gap read and the writes (SQLite: the row,
	// its record of use, the owner's index).
	want := map[string]int64{"sqlite": 5, "postgres": 3}
	for _, db := range databases(t) {
		t.Run(db.name, func(t *testing.T) {
			ctx := t.Context()
			var n, free atomic.Int64
			s, err := sqlstore.Open(ctx, &recording{DB: db.db, n: &n, free: &free}, db.d)
			if err != nil {
				t.Fatal(err)
			}
			ns := driver.Namespace{Name: "w", Limit: 64, Tolerance: time.Second}
			for i := range 8 {
				n.Store(0)
				free.Store(0)
				l, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: fmt.Sprint("o", i), Incarnation: "1", TTL: time.Minute, Preferred: -1})
				if err != nil {
					t.Fatal(err)
				}
				if l.Fence != 1 {
					t.Errorf("acquire %d: slot %d fence %d, want a slot never used (fence 1)", i, l.Slot, l.Fence)
				}
				if i == 0 {
					continue // creates the namespace
				}
				if free.Load() != 0 || n.Load() != want[db.name] {
					t.Errorf("acquire %d on a namespace with no free row: %d statements, %d of them the free-slot search; want %d and none",
						i, n.Load(), free.Load(), want[db.name])
				}
			}
			// Its owner's index was written with the slot: a second
			// Acquire of the same owner and incarnation returns the term.
			req := driver.AcquireRequest{Namespace: ns, Owner: "o3", Incarnation: "1", TTL: time.Minute, Preferred: -1}
			l1, err := s.Acquire(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			l2, err := s.Acquire(ctx, req)
			if err != nil || l2.Slot != l1.Slot || l2.Fence != l1.Fence {
				t.Errorf("acquire again: %+v, %v; want the term %+v", l2, err, l1)
			}
		})
	}
}

// A released row before the first slot never used in an Acquire's search
// order is taken first: the read of the gap, which lets an Acquire skip
// the free-slot search, says when a row there is free.
func TestFreeRowBeforeGap(t *testing.T) {
	eachStore(t, func(t *testing.T, db database, s *sqlstore.Store) {
		ctx := t.Context()
		ns := driver.Namespace{Name: "w", Limit: 2, Tolerance: time.Second}
		req := func(owner string) driver.AcquireRequest {
			return driver.AcquireRequest{Namespace: ns, Owner: owner, Incarnation: "1", TTL: time.Minute, Preferred: -1}
		}
		l, err := s.Acquire(ctx, req("x"))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, l, -1); err != nil {
			t.Fatal(err)
		}
		// An owner whose search starts at x's released slot: the other
		// slot, never used, comes after it.
		owner := ""
		for i := 0; owner == ""; i++ {
			if o := fmt.Sprint("y", i); driver.SearchStart(o, "1", ns.Limit) == l.Slot {
				owner = o
			}
		}
		got, err := s.Acquire(ctx, req(owner))
		if err != nil {
			t.Fatal(err)
		}
		if got.Slot != l.Slot || got.Fence != l.Fence+1 {
			t.Errorf("acquire: slot %d fence %d; want the released slot %d first in its order (fence %d)", got.Slot, got.Fence, l.Slot, l.Fence+1)
		}
	})
}

// The first Acquire on a new namespace finds no row, creates it, then
// acquires. On PostgreSQL the creation is one statement run outside any
// transaction, committed as it ends: in a fleet starting at once on a new
// namespace, every acquirer that found no row waits for the first one's
// insert to commit, and a transaction of three more round trips (the
// insert, the check of its slots, the commit) held them all that long.
func TestNewNamespaceStatements(t *testing.T) {
	// Outside a transaction / inside: SQLite creates the row in a
	// transaction of its own (the insert and the check of its slots).
	want := map[string][2]int64{"sqlite": {0, 8}, "postgres": {1, 4}}
	for _, db := range databases(t) {
		t.Run(db.name, func(t *testing.T) {
			ctx := t.Context()
			var n, free, out atomic.Int64
			s, err := sqlstore.Open(ctx, &recording{DB: db.db, n: &n, free: &free, out: &out}, db.d)
			if err != nil {
				t.Fatal(err)
			}
			n.Store(0)
			out.Store(0)
			ns := driver.Namespace{Name: "w", Limit: 64, Tolerance: time.Second}
			if _, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "o", Incarnation: "1", TTL: time.Minute, Preferred: -1}); err != nil {
				t.Fatal(err)
			}
			if got := [2]int64{out.Load(), n.Load() - out.Load()}; got != want[db.name] {
				t.Errorf("the first Acquire on a new namespace ran %d statements outside a transaction and %d in; want %d and %d",
					got[0], got[1], want[db.name][0], want[db.name][1])
			}
		})
	}
}
