// Package sqlstore is the SQL logic shared by the postgres and sqlite
// drivers: the tables, ranges, slot leases, seeding, purge and the
// regression guard (docs/design.md, The store's clock), written once over
// a small database interface
// and a Dialect that says how the two databases differ.
//
// # Tables
//
// Each is created on first use (CREATE TABLE IF NOT EXISTS), under a prefix
// the driver gives (a schema for PostgreSQL):
//
//	cosid_meta       name, value: the rows schema_version and store_id (the
//	                 store's identity, random, written with the tables; a
//	                 store made before it existed gets it at the next open
//	                 that may create), and after a purge slot_fence_floor
//	cosid_range      key, next, sealed
//	cosid_namespace  name, slot_limit, tolerance_ms
//	cosid_slot       namespace, slot, the fields of a ZooKeeper slot node, the
//	                 store time of its last write (mtime), the expiry and
//	                 ceiling they give (so the database can search free
//	                 slots), and a version for compare-and-set
//	cosid_owner      namespace, owner, slots: the owner index, "3,1,0"
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
const SchemaVersion = 1

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

// DB is a database: statements, and transactions that commit when fn
// returns nil and roll back otherwise. Tx may run fn again after the
// database aborted its transaction (a deadlock, a lock not available).
type DB interface {
	Querier
	Tx(ctx context.Context, fn func(Querier) error) error
}

// Dialect says how a database differs.
type Dialect struct {
	Name string
	// Prefix goes before every table name: `"myschema".` or "".
	Prefix string
	// Now is an SQL expression: the database's clock, ms since the epoch.
	Now string
	// ForUpdate and SkipLocked end a SELECT that locks the rows it reads;
	// empty for a database whose write transactions are exclusive anyway.
	ForUpdate, SkipLocked string
	// NoWait, if set, replaces ForUpdate where Acquire already holds row
	// locks (the search past the rows SkipLocked passed over): a lock it
	// cannot have at once fails the transaction instead of waiting, so two
	// acquirers never wait on each other (DB.Tx then tries it again).
	NoWait string
	// Numbered turns placeholder n into the database's form; nil keeps $n.
	Numbered func(n int) string
	// OwnsFile: the database holds nothing but this store, so a database
	// with tables and no cosid_meta is someone else's and is refused.
	OwnsFile bool
	// Setup runs before the tables are created, in the same transaction
	// (PostgreSQL: a lock against concurrent creation, the schema).
	Setup func(ctx context.Context, tx Querier) error
	// HasMeta is a query whose one boolean says whether cosid_meta exists.
	HasMeta string
	// Tables are the driver's own, created after the shared ones.
	Tables []string
	// PurgeMore deletes the driver's own tables in Purge's transaction
	// and says what it deleted.
	PurgeMore func(ctx context.Context, tx Querier, q func(string) string) ([]string, error)
}

// Store is the shared part of an open SQL store.
type Store struct {
	db DB
	d  Dialect
	q  map[string]string // statements, rewritten for the dialect once
	// markers replaces {p}, {now}, ... in one pass: what it puts in (a
	// schema name in the prefix) is never searched for markers again.
	markers *strings.Replacer

	// The regression guard: the highest value and fence seen so far.
	mu     sync.Mutex
	seenNx map[string]int64
	exists map[string]bool // keys whose row this store has seen
	seenFn map[slotKey]int64
}

type slotKey struct {
	ns   string
	slot int
}

// Open makes the tables if needed, checks the schema version and returns
// the store.
func Open(ctx context.Context, db DB, d Dialect) (*Store, error) {
	s := newStore(db, d)
	if err := s.setup(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// newStore is a Store on db with its statements written for d; it
// touches nothing in the database.
func newStore(db DB, d Dialect) *Store {
	s := &Store{db: db, d: d, seenNx: map[string]int64{}, exists: map[string]bool{}, seenFn: map[slotKey]int64{}}
	s.markers = markersOf(d)
	s.q = map[string]string{}
	for name, q := range statements {
		s.q[name] = s.rewrite(q)
	}
	return s
}

func markersOf(d Dialect) *strings.Replacer {
	return strings.NewReplacer("{p}", d.Prefix, "{now}", d.Now, "{forupdate}", d.ForUpdate, "{skiplocked}", d.SkipLocked)
}

// OpenExisting opens a store whose tables exist, writing nothing (the
// create=false of the drivers): a database without cosid_meta gives an
// error wrapping driver.ErrNotFound, and one that Open would refuse is
// refused the same way.
func OpenExisting(ctx context.Context, db DB, d Dialect) (*Store, error) {
	s := newStore(db, d)
	var has bool
	if err := db.QueryRow(ctx, d.HasMeta).Scan(&has); err != nil {
		return nil, err
	}
	if !has {
		return nil, fmt.Errorf("no cosid_meta table, and create=false creates none: %w", driver.ErrNotFound)
	}
	if err := Check(ctx, db, d); err != nil {
		return nil, err
	}
	return s, nil
}

// StoreID reads the store's identity (driver.Identifier).
func (s *Store) StoreID(ctx context.Context) (string, error) {
	var id string
	err := s.db.QueryRow(ctx, s.rewrite(`SELECT value FROM {p}cosid_meta WHERE name = 'store_id'`)).Scan(&id)
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

// Q returns the statement text for the dialect: {p} becomes the table
// prefix, {now} the clock, $n the dialect's placeholder.
func (s *Store) Q(q string) string { return s.rewrite(q) }

func (s *Store) rewrite(q string) string {
	q = s.markers.Replace(q)
	if s.d.Numbered == nil {
		return q
	}
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		if q[i] == '$' && i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9' {
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			n, _ := strconv.Atoi(q[i+1 : j])
			b.WriteString(s.d.Numbered(n))
			i = j - 1
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// DB returns the database.
func (s *Store) DB() DB { return s.db }

var tables = []string{
	`CREATE TABLE IF NOT EXISTS {p}cosid_meta (
		name TEXT PRIMARY KEY,
		value TEXT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS {p}cosid_range (
		key TEXT PRIMARY KEY,
		next BIGINT NOT NULL,
		sealed BOOLEAN NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS {p}cosid_namespace (
		name TEXT PRIMARY KEY,
		slot_limit BIGINT NOT NULL,
		tolerance_ms BIGINT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS {p}cosid_slot (
		namespace TEXT NOT NULL,
		slot BIGINT NOT NULL,
		owner TEXT NOT NULL,
		incarnation TEXT NOT NULL,
		last_owner TEXT NOT NULL,
		fence BIGINT NOT NULL,
		ttl_ms BIGINT NOT NULL,
		tolerance_ms BIGINT NOT NULL,
		floor BIGINT NOT NULL,
		expires_min BIGINT NOT NULL,
		ceiling_min BIGINT NOT NULL,
		next_floor BIGINT NOT NULL,
		mtime BIGINT NOT NULL,
		expires_at BIGINT NOT NULL,
		ceiling BIGINT NOT NULL,
		version BIGINT NOT NULL,
		PRIMARY KEY (namespace, slot))`,
	`CREATE TABLE IF NOT EXISTS {p}cosid_owner (
		namespace TEXT NOT NULL,
		owner TEXT NOT NULL,
		slots TEXT NOT NULL,
		PRIMARY KEY (namespace, owner))`,
}

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
		if s.d.OwnsFile {
			if err := s.checkForeign(ctx, tx); err != nil {
				return err
			}
		}
		var has bool
		if err := tx.QueryRow(ctx, s.d.HasMeta).Scan(&has); err != nil {
			return err
		}
		if has {
			if err := s.checkVersion(ctx, tx); err != nil {
				return err
			}
		}
		for _, q := range slices.Concat(tables, s.d.Tables) {
			if _, err := tx.Exec(ctx, s.rewrite(q)); err != nil {
				return fmt.Errorf("create tables: %w", err)
			}
		}
		_, err := tx.Exec(ctx, s.rewrite(`INSERT INTO {p}cosid_meta (name, value) VALUES ('schema_version', $1)
			ON CONFLICT (name) DO NOTHING`), strconv.Itoa(SchemaVersion))
		if err != nil {
			return err
		}
		// The identity: made with the tables, or given to a store made
		// before identities existed; never replaced.
		_, err = tx.Exec(ctx, s.rewrite(`INSERT INTO {p}cosid_meta (name, value) VALUES ('store_id', $1)
			ON CONFLICT (name) DO NOTHING`), driver.NewStoreID())
		return err
	})
}

// Check reads, without changing anything, whether the database would be
// refused by Open: someone else's, or tables of another schema version.
func Check(ctx context.Context, db DB, d Dialect) error {
	s := &Store{db: db, d: d, markers: markersOf(d)}
	return db.Tx(ctx, func(tx Querier) error {
		if d.OwnsFile {
			if err := s.checkForeign(ctx, tx); err != nil {
				return err
			}
		}
		var has bool
		if err := tx.QueryRow(ctx, d.HasMeta).Scan(&has); err != nil {
			return err
		}
		if has {
			return s.checkVersion(ctx, tx)
		}
		return nil
	})
}

// checkVersion refuses tables of another schema version.
func (s *Store) checkVersion(ctx context.Context, tx Querier) error {
	var v string
	err := tx.QueryRow(ctx, s.rewrite(`SELECT value FROM {p}cosid_meta WHERE name = 'schema_version'`)).Scan(&v)
	if errors.Is(err, ErrNoRows) {
		return fmt.Errorf("cosid_meta has no schema_version row: %w", driver.ErrCorrupt)
	}
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		return fmt.Errorf("cosid_meta says schema_version %q, not a number: %w", v, driver.ErrCorrupt)
	case n > SchemaVersion:
		return fmt.Errorf("the tables have schema version %d, newer than this driver's %d: upgrade the driver: %w",
			n, SchemaVersion, driver.ErrConfigMismatch)
	case n < SchemaVersion:
		return fmt.Errorf("the tables have schema version %d, older than this driver's %d, and no migration exists: %w",
			n, SchemaVersion, driver.ErrConfigMismatch)
	}
	return nil
}

// checkForeign refuses a database that has tables but no cosid_meta: it
// belongs to someone else, and creating tables in it would change it.
func (s *Store) checkForeign(ctx context.Context, tx Querier) error {
	rows, err := tx.Query(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table'`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var names []string
	ours := false
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return err
		}
		names = append(names, n)
		ours = ours || n == "cosid_meta"
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(names) > 0 && !ours {
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

// seenNextKnown is seenNext, and whether this store has seen the key's row.
func (s *Store) seenNextKnown(key string) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seenNx[key], s.exists[key]
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
	if next < floor {
		return fmt.Errorf("key's next value %d is below %d, seen earlier by this store: the database went back (restored from a backup, or a replica promoted without the last commits): %w",
			next, floor, driver.ErrCorrupt)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seenNx[key] = max(s.seenNx[key], next)
	return nil
}

// seenFence returns the highest fence of a slot seen so far.
func (s *Store) seenFence(ns string, slot int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seenFn[slotKey{ns, slot}]
}

// guardFence does for a slot's fence what guardNext does for a key.
func (s *Store) guardFence(ns string, slot int, floor, fence int64) error {
	if fence < floor {
		return fmt.Errorf("slot %d's fence %d is below %d, seen earlier by this store: the database went back (restored from a backup, or a replica promoted without the last commits): %w",
			slot, fence, floor, driver.ErrCorrupt)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := slotKey{ns, slot}
	s.seenFn[k] = max(s.seenFn[k], fence)
	return nil
}

// forget clears the guard, after a purge deleted everything on purpose.
func (s *Store) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.seenNx)
	clear(s.exists)
	clear(s.seenFn)
}

// Ping runs one statement that reads nothing (driver.Pinger): a round trip
// to the server, or a connection of the pool checked out and back.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.db.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("%s: ping: %w", s.d.Name, err)
	}
	return nil
}
