// Package sqlstore is the SQL logic shared by the SQL drivers: the
// tables, ranges, slot leases, seeding, purge and the regression guard
// (docs/design.md, The store's clock), written once over a small database
// interface and a Dialect that says how a database differs. What differs
// is the Dialect's alone: the files of this package name no database.
//
// # Tables
//
// Each is created on first use (CREATE TABLE IF NOT EXISTS), under a prefix
// the dialect gives (Dialect.Prefix: a schema, say):
//
//	cosid_meta       name, value: the rows schema_version and store_id (the
//	                 store's identity, random, written with the tables; a
//	                 store made before it existed gets it at the next open
//	                 that may create), after a purge slot_fence_floor, and
//	                 layout/NS, the ID layout of namespace NS (KeepLayout)
//	cosid_range      key, next, sealed
//	cosid_namespace  name, slot_limit, tolerance_ms, sealed (since schema
//	                 version 2; Open and OpenExisting upgrade version 1)
//	cosid_slot       namespace, slot, the fields of a driver.SlotRecord, the
//	                 store time of its last write (mtime), the expiry and
//	                 ceiling they give (so the database can search free
//	                 slots), and a version for compare-and-set
//	cosid_owner      namespace, owner, slots: the owner index, "3,1,0"
//	cosid_slot_used  namespace, slot: each slot created since the last purge
//	                 (since schema version 3; the upgrade from version 2
//	                 records the slots that have a row then)
//
// # A slot row deleted by hand
//
// A slot's row carries its fences and its term's ceiling; without it, a
// slot would start again at fence 1 and floor 0 while its holder still
// issues IDs under that worker ID. So the creation of a slot row also
// writes the slot's cosid_slot_used row, in the same transaction, and
// nothing but a purge deletes it: a slot used before whose row is missing
// is reported (driver.ErrCorrupt) to the Acquire or SeedSlot that would
// create it, never started again. The record is one row per slot, written
// once, when the slot is first created: no Acquire writes a row shared by
// the namespace. A purge deletes the records with the slots (its
// slot_fence_floor and its refusal of live terms keep fences and
// timestamps going up), so a purged namespace is used again as new. What
// the upgrade from version 2 cannot know: a slot whose row was deleted by
// hand before the upgrade looks never used, as it did before.
//
// Times are milliseconds since the epoch in the database's clock (Dialect.Now).
package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cosid-go/store/driver"
)

// SchemaVersion is the version of the tables this code reads and writes.
// Version 1 (no namespace seal) and version 2 (no record of used slots)
// are upgraded when a store opens (upgrade).
const SchemaVersion = 3

// ErrNoRows is what a Row's Scan returns when the query found nothing; the
// adapters translate their library's own.
var ErrNoRows = errors.New("no rows")

// Row is one result row.
type Row interface{ Scan(dest ...any) error }

// Rows is a result set.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Querier runs statements: a connection pool or a transaction.
type Querier interface {
	Exec(ctx context.Context, query string, args ...any) (rowsAffected int64, err error)
	QueryRow(ctx context.Context, query string, args ...any) Row
	Query(ctx context.Context, query string, args ...any) (Rows, error)
}

// Int64Querier is a DB that returns a statement's one int64 value
// without a Row: Next's path, where a Row and the arguments of its Scan
// cost allocations on every call. A DB need not have it.
type Int64Querier interface {
	// QueryInt64 is QueryRow(ctx, query, args...).Scan into an int64.
	QueryInt64(ctx context.Context, query string, args ...any) (int64, error)
}

// DB is a database: statements, and transactions that commit when fn
// returns nil and roll back otherwise. Tx may run fn again after the
// database aborted its transaction (a deadlock, a lock not available).
type DB interface {
	Querier
	Tx(ctx context.Context, fn func(Querier) error) error
}

// Capabilities are the driver interfaces a SQL driver's store has through
// its Store; each driver asserts that its store keeps them all (a method
// of its own with another signature would hide one).
type Capabilities interface {
	driver.RangeStore
	driver.RangeAdvancer
	driver.SlotLeaseStore
	driver.SlotSeeder
	driver.LayoutKeeper
	driver.Purger
	driver.Pinger
	driver.Identifier
}

var _ Capabilities = (*Store)(nil)

// Store is the shared part of an open SQL store.
type Store struct {
	db DB
	qi Int64Querier // db, if it is one
	d  Dialect
	q  *statements

	// The regression guard: the highest value seen so far, and the
	// furthest state of each slot (slotguard.go).
	mu       sync.Mutex
	seenNx   map[string]int64
	exists   map[string]bool // keys whose row this store has seen
	sealed   map[string]bool // keys this store has seen sealed: a seal is never undone
	sealedNs map[string]bool // namespaces this store has seen sealed (sealguard.go)
	seenSl   map[slotKey]driver.SlotMark
}

type slotKey struct {
	ns   string
	slot int
}

// Open makes the tables if needed, checks the schema version and returns
// the store.
func Open(ctx context.Context, db DB, d Dialect) (*Store, error) {
	s, err := newStore(db, d)
	if err != nil {
		return nil, err
	}
	if err := s.setup(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// newStore is a Store on db with its statements written for d; it
// touches nothing in the database.
func newStore(db DB, d Dialect) (*Store, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	q, err := newStatements(d)
	if err != nil {
		return nil, err
	}
	qi, _ := db.(Int64Querier)
	return &Store{db: db, qi: qi, d: d, q: q, seenNx: map[string]int64{}, exists: map[string]bool{}, sealed: map[string]bool{}, sealedNs: map[string]bool{}, seenSl: map[slotKey]driver.SlotMark{}}, nil
}

// OpenExisting opens a store whose tables exist, writing nothing (the
// create=false of the drivers): a database without cosid_meta gives an
// error wrapping driver.ErrNotFound, and one that Open would refuse is
// refused the same way.
func OpenExisting(ctx context.Context, db DB, d Dialect) (*Store, error) {
	s, err := newStore(db, d)
	if err != nil {
		return nil, err
	}
	var has bool
	if err := db.QueryRow(ctx, d.HasMeta).Scan(&has); err != nil {
		return nil, err
	}
	if !has {
		return nil, fmt.Errorf("no cosid_meta table, and create=false creates none: %w", driver.ErrNotFound)
	}
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	// Not a creation: the store exists, and the code below needs its
	// tables at this version.
	if err := s.db.Tx(ctx, func(tx Querier) error { return s.upgrade(ctx, tx) }); err != nil {
		return nil, err
	}
	return s, nil
}

// StoreID reads the store's identity (driver.Identifier).
func (s *Store) StoreID(ctx context.Context) (string, error) {
	var id string
	err := s.db.QueryRow(ctx, s.q.StoreID).Scan(&id)
	if errors.Is(err, ErrNoRows) {
		return "", fmt.Errorf("the store has no identity yet (made before identities existed): "+
			"an open with create=true writes one: %w", driver.ErrNotFound)
	}
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", fmt.Errorf("cosid_meta has an empty store_id: %w", driver.ErrCorrupt)
	}
	return id, nil
}

// DB returns the database.
func (s *Store) DB() DB { return s.db }

// setup creates the tables and the version row in one transaction, after
// checking that the database is a store's of a version this code knows:
// nothing is changed in a database that is refused.
func (s *Store) setup(ctx context.Context) error {
	return s.db.Tx(ctx, func(tx Querier) error {
		if s.d.Setup != nil {
			if err := s.d.Setup(ctx, tx); err != nil {
				return err
			}
		}
		if err := s.checkIn(ctx, tx); err != nil {
			return err
		}
		if err := s.lockForUpgrade(ctx, tx); err != nil {
			return err
		}
		for _, q := range s.q.Create {
			if _, err := tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("create tables: %w", err)
			}
		}
		_, err := tx.Exec(ctx, s.q.InitVersion, strconv.Itoa(SchemaVersion))
		if err != nil {
			return err
		}
		if err := s.upgrade(ctx, tx); err != nil {
			return err
		}
		// The identity: made with the tables, or given to a store made
		// before identities existed; never replaced.
		_, err = tx.Exec(ctx, s.q.InitStoreID, driver.NewStoreID())
		return err
	})
}

// Check reads, without changing anything, whether the database would be
// refused by Open: someone else's, or tables of another schema version.
func Check(ctx context.Context, db DB, d Dialect) error {
	s, err := newStore(db, d)
	if err != nil {
		return err
	}
	return s.check(ctx)
}

func (s *Store) check(ctx context.Context) error {
	return s.db.Tx(ctx, func(tx Querier) error { return s.checkIn(ctx, tx) })
}

// checkIn is check in transaction tx.
func (s *Store) checkIn(ctx context.Context, tx Querier) error {
	if err := s.checkForeign(ctx, tx); err != nil {
		return err
	}
	var has bool
	if err := tx.QueryRow(ctx, s.d.HasMeta).Scan(&has); err != nil {
		return err
	}
	if has {
		return s.checkVersion(ctx, tx)
	}
	return nil
}

// checkVersion refuses tables of a schema version this code can neither
// use nor upgrade.
func (s *Store) checkVersion(ctx context.Context, tx Querier) error {
	n, err := s.schemaVersion(ctx, tx)
	switch {
	case err != nil:
		return err
	case n > SchemaVersion:
		return fmt.Errorf("the tables have schema version %d, newer than this driver's %d: upgrade the driver: %w",
			n, SchemaVersion, driver.ErrConfigMismatch)
	case n < 1:
		return fmt.Errorf("the tables have schema version %d, older than any this driver knows: %w", n, driver.ErrConfigMismatch)
	}
	return nil
}

func (s *Store) schemaVersion(ctx context.Context, tx Querier) (int, error) {
	var v string
	err := tx.QueryRow(ctx, s.q.SchemaVersion).Scan(&v)
	if errors.Is(err, ErrNoRows) {
		return 0, fmt.Errorf("cosid_meta has no schema_version row: %w", driver.ErrCorrupt)
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("cosid_meta says schema_version %q, not a number: %w", v, driver.ErrCorrupt)
	}
	return n, nil
}

// upgrade brings tables of an older schema version to this one, in tx:
// from version 1, the namespace gets its sealed column (every namespace
// unsealed); from version 2, cosid_slot_used is made and records every
// slot that has a row. Stores opening at once upgrade one at a time
// (Dialect.PurgeLock, which also waits for the slot writes under way); the
// version is read again under that lock. A process of an older version
// still running on the tables ignores seals (version 1) and records no
// slot it creates (version 2): upgrade every instance before relying on
// either.
func (s *Store) upgrade(ctx context.Context, tx Querier) error {
	n, err := s.schemaVersion(ctx, tx)
	if err != nil || n >= SchemaVersion {
		return err
	}
	if s.d.PurgeLock != "" {
		if _, err := tx.Exec(ctx, s.d.Rewrite(s.d.PurgeLock)); err != nil {
			return err
		}
		if n, err = s.schemaVersion(ctx, tx); err != nil || n >= SchemaVersion {
			return err
		}
	}
	if n == 1 {
		if _, err := tx.Exec(ctx, s.q.Upgrade1); err != nil {
			return fmt.Errorf("upgrade the tables from schema version 1: %w", err)
		}
	}
	for _, q := range s.q.Upgrade2 {
		if _, err := tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("upgrade the tables from schema version 2: %w", err)
		}
	}
	_, err = tx.Exec(ctx, s.q.SetVersion, strconv.Itoa(SchemaVersion))
	return err
}

// lockForUpgrade takes, before setup creates the tables, the lock under
// which upgrade runs (Dialect.PurgeLock) when the tables exist at an older
// version: the creation of a table the upgrade adds (cosid_slot_used) then
// waits for, or is seen by, an upgrade of another store opening at once
// without create (OpenExisting), instead of both creating it.
func (s *Store) lockForUpgrade(ctx context.Context, tx Querier) error {
	if s.d.PurgeLock == "" {
		return nil
	}
	var has bool
	if err := tx.QueryRow(ctx, s.d.HasMeta).Scan(&has); err != nil || !has {
		return err
	}
	n, err := s.schemaVersion(ctx, tx)
	if err != nil || n >= SchemaVersion {
		return err
	}
	_, err = tx.Exec(ctx, s.d.Rewrite(s.d.PurgeLock))
	return err
}

// checkForeign refuses a database the store has to itself
// (Dialect.ListTables) that has tables but no cosid_meta: it belongs to
// someone else, and creating tables in it would change it.
func (s *Store) checkForeign(ctx context.Context, tx Querier) error {
	if s.d.ListTables == nil {
		return nil
	}
	names, err := s.d.ListTables(ctx, tx)
	if err != nil {
		return err
	}
	if len(names) > 0 && !slices.Contains(names, "cosid_meta") {
		return fmt.Errorf("not a cosid store: the database has tables (%s) but no cosid_meta; refusing to change it: %w",
			strings.Join(names, ", "), driver.ErrConfigMismatch)
	}
	return nil
}

// The regression guard compares what an operation reads with the highest
// value seen before the operation began: only those come from commits that
// happened before it, so a lower one means the database went back. (Values
// seen by operations running at the same time may commit in any order.)

// seenNext returns the highest next value of key seen so far.
func (s *Store) seenNext(key string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seenNx[key]
}

// nextState is seenNext, whether this store has seen key's row, and
// whether it has seen it sealed (sawSealed): what Next reads, under one
// lock.
func (s *Store) nextState(key string) (floor int64, known, sealed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seenNx[key], s.exists[key], s.sealed[key]
}

// sawRow records that key's row exists.
func (s *Store) sawRow(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exists[key] = true
}

// guardNext refuses a next value below floor, taken by seenNext when the
// operation began, and records next.
func (s *Store) guardNext(key string, floor, next int64) error {
	return s.guardRange(key, floor, next, next)
}

// guardRange refuses a range starting below floor, taken by seenNext
// when the operation began, and records end, the key's next value after
// it (a check of end alone would let floor-1 out again).
func (s *Store) guardRange(key string, floor, start, end int64) error {
	if start < floor {
		return fmt.Errorf("key's next value %d is below %d, seen earlier by this store: the database went back (restored from a backup, or a replica promoted without the last commits): %w",
			start, floor, driver.ErrCorrupt)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seenNx[key] = max(s.seenNx[key], end)
	return nil
}

// queryInt64 runs q for its one int64 value.
func (s *Store) queryInt64(ctx context.Context, q string, args ...any) (int64, error) {
	if s.qi != nil {
		return s.qi.QueryInt64(ctx, q, args...)
	}
	var v int64
	err := s.db.QueryRow(ctx, q, args...).Scan(&v)
	return v, err
}

// forget clears the guard, after a purge deleted everything on purpose.
func (s *Store) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.seenNx)
	clear(s.exists)
	clear(s.sealed)
	clear(s.sealedNs)
	clear(s.seenSl)
}

// Ping runs one statement that reads nothing (driver.Pinger): a round trip
// to the server, or a connection of the pool checked out and back.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.db.QueryRow(ctx, s.q.Ping).Scan(&one); err != nil {
		return fmt.Errorf("%s: ping: %w", s.d.Name, err)
	}
	return nil
}
