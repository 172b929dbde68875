package tck_test

// The variants of the operator's checks (Operator/*): the SQLite driver,
// whose harness restores and deletes rows as an operator would, sound and
// with the store's memory of what it saw taken away; and memory stores
// wrapped with a lock fence counter that a snapshot puts back, or with a
// session the harness ends.

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	_ "github.com/cosid-go/store/drivers/sqlite"
	"github.com/cosid-go/store/internal/testing/rawdriver"
	"github.com/cosid-go/store/tck"
)

func init() {
	restoreChecks := []string{"Operator/RestoreRanges", "Operator/RestoreSlots", "Operator/DeletedKey"}
	variants = append(variants,
		variant{name: "operator-sqlite", checks: restoreChecks, suite: sqliteSuite(nil)},
		variant{name: "operator-amnesiac", checks: restoreChecks, broken: true, suite: sqliteSuite(amnesiac)},
		variant{name: "deleted-slot-sqlite", checks: []string{"Operator/DeletedSlot"}, suite: sqliteSuite(nil)},
		variant{name: "deleted-slot-unrecorded", checks: []string{"Operator/DeletedSlot"}, broken: true, suite: unrecordedSuite(nil)},
		variant{name: "deleted-slot-fence-record", checks: []string{"Operator/DeletedSlot"}, suite: unrecordedSuite(fenceRecord)},
		variant{name: "restore-locks-guarded", checks: []string{"Operator/RestoreLocks"}, suite: counterSuite(true)},
		variant{name: "restore-locks-unguarded", checks: []string{"Operator/RestoreLocks"}, broken: true, suite: counterSuite(false)},
		variant{name: "revoked-told", checks: []string{"Operator/RevokedSession"}, suite: sessionSuite(false)},
		variant{name: "revoked-untold", checks: []string{"Operator/RevokedSession"}, broken: true, suite: sessionSuite(true)},
	)
}

// openSQLite opens the SQLite driver's store on path.
func openSQLite(path string) (driver.Store, error) {
	st, err := store.Open("sqlite", map[string]string{"path": path})
	if err != nil {
		return nil, err
	}
	return rawdriver.Of(st), nil
}

// sqliteHarness opens SQLite stores on one file; wrap, if set, wraps each.
// Unrecorded, its DeleteSlot also deletes the slot's record of use
// (cosid_slot_used): the store is then as one that keeps no record of a
// slot beyond its row.
type sqliteHarness struct {
	path       string
	wrap       func(path string, d driver.Store) driver.Store
	unrecorded bool
}

func sqliteSuite(wrap func(string, driver.Store) driver.Store) func(*testing.T) tck.Suite {
	return sqliteSuiteOf(wrap, false)
}

// unrecordedSuite is sqliteSuite on an unrecorded harness.
func unrecordedSuite(wrap func(string, driver.Store) driver.Store) func(*testing.T) tck.Suite {
	return sqliteSuiteOf(wrap, true)
}

func sqliteSuiteOf(wrap func(string, driver.Store) driver.Store, unrecorded bool) func(*testing.T) tck.Suite {
	return func(*testing.T) tck.Suite {
		return tck.Suite{
			NewHarness: func(_ context.Context, t *testing.T) (tck.Harness, error) {
				return sqliteHarness{path: filepath.Join(t.TempDir(), "store.db"), wrap: wrap, unrecorded: unrecorded}, nil
			},
			Ranges: true, Slots: true,
			NotPersistent: "the variants of the operator's checks run no restart",
		}
	}
}

func (h sqliteHarness) NewStore(context.Context) (driver.Store, error) {
	d, err := openSQLite(h.path)
	if err != nil || h.wrap == nil {
		return d, err
	}
	return h.wrap(h.path, d), nil
}

func (sqliteHarness) Close() error { return nil }

// exec runs statements on a connection of the operator's own.
func (h sqliteHarness) exec(ctx context.Context, stmts ...string) error {
	db, err := sql.Open("sqlite", h.path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // ATTACH and BEGIN belong to one connection
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

var sqliteSnapshots atomic.Int64

// Snapshot copies the file (VACUUM INTO); the restore writes its rows back
// into the running stores' file.
func (h sqliteHarness) Snapshot(ctx context.Context) (func(context.Context) error, error) {
	snap := filepath.Join(filepath.Dir(h.path), fmt.Sprintf("snap-%d.db", sqliteSnapshots.Add(1)))
	if err := h.exec(ctx, fmt.Sprintf("VACUUM INTO '%s'", snap)); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		stmts := []string{fmt.Sprintf("ATTACH DATABASE '%s' AS snap", snap), "BEGIN IMMEDIATE"}
		for _, t := range []string{"cosid_range", "cosid_namespace", "cosid_slot", "cosid_owner", "cosid_slot_used"} {
			stmts = append(stmts, "DELETE FROM main."+t, "INSERT INTO main."+t+" SELECT * FROM snap."+t)
		}
		return h.exec(ctx, append(stmts, "COMMIT", "DETACH DATABASE snap")...)
	}, nil
}

func (h sqliteHarness) DeleteRangeKey(ctx context.Context, key string) error {
	return h.exec(ctx, fmt.Sprintf("DELETE FROM cosid_range WHERE key = '%s'", key))
}

func (h sqliteHarness) DeleteSlot(ctx context.Context, ns string, slot int) error {
	stmts := []string{fmt.Sprintf("DELETE FROM cosid_slot WHERE namespace = '%s' AND slot = %d", ns, slot)}
	if h.unrecorded {
		stmts = append(stmts, fmt.Sprintf("DELETE FROM cosid_slot_used WHERE namespace = '%s' AND slot = %d", ns, slot))
	}
	return h.exec(ctx, stmts...)
}

// amnesiacStore forgets what it saw: each Next and Acquire goes through a
// store opened for that call alone, so no regression guard can remember a
// value or a fence from before a restore.
type amnesiacStore struct {
	driver.Store
	driver.RangeStore
	driver.SlotLeaseStore
	path string
}

func amnesiac(path string, d driver.Store) driver.Store {
	return amnesiacStore{Store: d, RangeStore: d.(driver.RangeStore), SlotLeaseStore: d.(driver.SlotLeaseStore), path: path}
}

func (a amnesiacStore) Next(ctx context.Context, key string, step int64) (int64, error) {
	d, err := openSQLite(a.path)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	return d.(driver.RangeStore).Next(ctx, key, step)
}

func (a amnesiacStore) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	d, err := openSQLite(a.path)
	if err != nil {
		return driver.Lease{}, err
	}
	defer d.Close()
	return d.(driver.SlotLeaseStore).Acquire(ctx, req)
}

// fenceRecordStore keeps, beside each slot, a record that outlives the
// slot's row (a range key raised to each term's fence), and refuses a
// term whose fence is not above it: a slot deleted by hand is not started
// again from zero. Another way to the same end than SQLite's own record
// (which the unrecorded harness deletes), for the check's sake.
type fenceRecordStore struct {
	driver.Store
	driver.RangeStore
	driver.SlotLeaseStore
}

func fenceRecord(_ string, d driver.Store) driver.Store {
	return fenceRecordStore{Store: d, RangeStore: d.(driver.RangeStore), SlotLeaseStore: d.(driver.SlotLeaseStore)}
}

func (f fenceRecordStore) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	l, err := f.SlotLeaseStore.Acquire(ctx, req)
	if err != nil {
		return l, err
	}
	key := fmt.Sprintf("fence-record/%s/%d", l.Namespace, l.Slot)
	recorded, _, err := f.Current(ctx, key)
	if err != nil {
		return driver.Lease{}, err
	}
	if l.Fence <= recorded {
		return driver.Lease{}, fmt.Errorf("slot %d got fence %d, not above %d recorded: deleted by hand? %w",
			l.Slot, l.Fence, recorded, driver.ErrCorrupt)
	}
	if _, err := f.RangeStore.Next(ctx, key, l.Fence-recorded); err != nil {
		return driver.Lease{}, err
	}
	return l, nil
}

// counterHarness gives memory stores lock fences from a counter of its
// own, which a snapshot copies and a restore puts back, as a database's
// sequence goes back with a restored dump.
type counterHarness struct {
	memHarness
	guard bool
	mu    sync.Mutex
	fence int64
}

func counterSuite(guard bool) func(*testing.T) tck.Suite {
	return locksOnly(harnessSuite(func(h memHarness) tck.Harness { return &counterHarness{memHarness: h, guard: guard} }))
}

func (h *counterHarness) NewStore(ctx context.Context) (driver.Store, error) {
	return h.wrapped(ctx, func(d memDriver) driver.Store { return &counterStore{Store: d, Locker: d, h: h} })
}

func (h *counterHarness) Snapshot(context.Context) (func(context.Context) error, error) {
	h.mu.Lock()
	saved := h.fence
	h.mu.Unlock()
	return func(context.Context) error {
		h.mu.Lock()
		h.fence = saved
		h.mu.Unlock()
		return nil
	}, nil
}

// counterStore takes its fences from the harness's counter; guarded, it
// refuses (ErrCorrupt) a fence not above the highest it was given.
type counterStore struct {
	driver.Store
	driver.Locker
	h    *counterHarness
	mu   sync.Mutex
	seen int64
}

func (s *counterStore) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	l, err := s.Locker.Lock(ctx, name, owner, wait)
	if err != nil {
		return nil, err
	}
	s.h.mu.Lock()
	s.h.fence++
	fence := s.h.fence
	s.h.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h.guard && fence <= s.seen {
		_ = l.Unlock(ctx) // refused: the grant is given back
		return nil, fmt.Errorf("lock fence %d is not above %d seen: %w", fence, s.seen, driver.ErrCorrupt)
	}
	s.seen = max(s.seen, fence)
	return fencedLock{l, fence}, nil
}

type fencedLock struct {
	driver.Lock
	fence int64
}

func (l fencedLock) Fence() int64 { return l.fence }

// sessionHarness ends a memory store's "session" by closing it under its
// wrapper, which stays open to the kit: its holds are lost as a revoked
// session's are. untold hides that from the holder (Lost never closes).
type sessionHarness struct {
	memHarness
	untold bool
}

func sessionSuite(untold bool) func(*testing.T) tck.Suite {
	return locksOnly(harnessSuite(func(h memHarness) tck.Harness { return sessionHarness{memHarness: h, untold: untold} }))
}

func (h sessionHarness) NewStore(ctx context.Context) (driver.Store, error) {
	return h.wrapped(ctx, func(d memDriver) driver.Store { return &sessionStore{inner: d, Locker: d, untold: h.untold} })
}

func (sessionHarness) EndSession(_ context.Context, d driver.Store) error {
	s, ok := d.(*sessionStore)
	if !ok {
		return fmt.Errorf("EndSession of %T, not a store of this harness", d)
	}
	return s.end()
}

type sessionStore struct {
	driver.Locker
	inner  driver.Store
	untold bool
	once   sync.Once
	err    error
}

func (s *sessionStore) end() error {
	s.once.Do(func() { s.err = s.inner.Close() })
	return s.err
}

func (s *sessionStore) Close() error { return s.end() }

func (s *sessionStore) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	l, err := s.Locker.Lock(ctx, name, owner, wait)
	if err != nil || !s.untold {
		return l, err
	}
	return untoldLock{Lock: l, lost: make(chan struct{})}, nil
}

// untoldLock's Lost never closes.
type untoldLock struct {
	driver.Lock
	lost chan struct{}
}

func (l untoldLock) Lost() <-chan struct{} { return l.lost }
