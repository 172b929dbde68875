// Package sqlite is the SQLite driver of package store, on the pure-Go
// modernc.org/sqlite (no C compiler needed): ranges, slot leases, seeding
// and purge in one file, for programs on one host that want IDs that
// survive restarts with no server (SPEC 11). Several processes may share
// the file.
//
// # Opening
//
//	import _ "github.com/cosid-go/store/drivers/sqlite"
//
//	st, err := store.Open("sqlite", map[string]string{"path": "/var/lib/app/ids.db"})
//
// # Options
//
//   - path (required): the database file, created if missing. A file that
//     is not SQLite, or a SQLite database with tables but none of this
//     store's, is refused and left unchanged.
//   - busyTimeout: how long a statement waits for another process's write
//     lock; default 5s.
//
// # Durability
//
// The file is in WAL mode with synchronous=FULL: a Next that returned is on
// disk, through power loss. The store's clock is the host's clock, the
// same for every process on the host.
//
// # Locks
//
// The Locker is not supported (ErrUnsupported): a lock needs a liveness
// signal from its holder that SQLite does not give across processes.
package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers database/sql driver "sqlite"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
)

func init() { store.Register("sqlite", Open) }

// Store is an open SQLite store. It implements driver.Store,
// driver.RangeStore, driver.SlotStore, driver.SlotSeeder, driver.Purger and
// driver.Pinger.
type Store struct {
	*sqlstore.Store
	db    *sql.DB
	pin   *sql.Conn // the connection that keeps the -wal and -shm files
	stmts *stmtCache
	guard *fileGuard
	// release uncounts the store once (see inUse), on the first Close.
	release sync.Once
}

var (
	_ driver.RangeStore = (*Store)(nil)
	_ driver.SlotStore  = (*Store)(nil)
	_ driver.SlotSeeder = (*Store)(nil)
	_ driver.Purger     = (*Store)(nil)
	_ driver.Pinger     = (*Store)(nil)
)

// Open opens a store from options (see the package documentation). It is
// the driver's factory.
func Open(options map[string]string) (driver.Store, error) {
	o := driver.NewOptions(options)
	path := o.String("path", "")
	busy := o.Duration("busyTimeout", 5*time.Second)
	if err := o.Err(); err != nil {
		return nil, err
	}
	return New(context.Background(), path, busy)
}

// dialect is SQLite's: numbered ?N placeholders, the host clock, no row
// locks (a write transaction holds the whole file).
var dialect = sqlstore.Dialect{
	Name:     "sqlite",
	Now:      "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
	Numbered: func(n int) string { return "?" + strconv.Itoa(n) },
	OwnsFile: true,
	HasMeta:  "SELECT count(*) > 0 FROM sqlite_schema WHERE type = 'table' AND name = 'cosid_meta'",
}

// New opens the store in the file at path.
func New(ctx context.Context, path string, busyTimeout time.Duration) (*Store, error) {
	path, err := checkPath(path)
	if err != nil {
		return nil, err
	}
	if err := checkBusyTimeout(busyTimeout); err != nil {
		return nil, err
	}
	fi, real, err := openFile(ctx, path, busyTimeout)
	if err != nil {
		return nil, err
	}
	if err := claim(path, real, fi.id); err != nil {
		return nil, err
	}
	s, err := openClaimed(ctx, path, real, fi.id, busyTimeout)
	if err != nil {
		release(fi.id)
		return nil, err
	}
	return s, nil
}

// openClaimed opens the store in the file New found and claimed.
func openClaimed(ctx context.Context, path, real string, id fileID, busyTimeout time.Duration) (*Store, error) {
	mu := fileLock(id)
	// Checked before WAL mode is set, which would rewrite a foreign file's
	// header.
	if err := precheck(ctx, path, busyTimeout, mu); err != nil {
		return nil, err
	}
	g := &fileGuard{path: path, real: real, id: id}
	sdb, err := sql.Open("sqlite", dsn(path, busyTimeout, true))
	if err != nil {
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	// The connection kept open for the store's life: it keeps the -wal and
	// -shm files in place (see fileGuard). A read opens them.
	pin, err := sdb.Conn(ctx)
	if err == nil {
		var n int
		err = pin.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n)
		if err == nil {
			err = g.arm()
		}
		if err != nil {
			pin.Close()
		}
	}
	if err != nil {
		sdb.Close()
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	armed(id, g.shm)
	stmts := &stmtCache{db: sdb, m: map[string]*sql.Stmt{}}
	s, err := sqlstore.Open(ctx, db{q: sdb, mu: mu, stmts: stmts, g: g}, dialect)
	if err != nil {
		stmts.close()
		pin.Close()
		sdb.Close()
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	return &Store{Store: s, db: sdb, pin: pin, stmts: stmts, guard: g}, nil
}

// precheck reads the file without changing it: it must be SQLite, and
// either empty, or this store's at a schema version this code knows.
func precheck(ctx context.Context, path string, busyTimeout time.Duration, mu *sync.Mutex) error {
	sdb, err := sql.Open("sqlite", dsn(path, busyTimeout, false))
	if err != nil {
		return fmt.Errorf("sqlite %s: %w", path, err)
	}
	defer sdb.Close()
	err = sqlstore.Check(ctx, db{q: sdb, mu: mu}, dialect)
	if err != nil && strings.Contains(err.Error(), "file is not a database") {
		return fmt.Errorf("sqlite %s: not a SQLite database, refusing to touch it: %v: %w", path, err, driver.ErrConfigMismatch)
	}
	if err != nil {
		return fmt.Errorf("sqlite %s: %w", path, err)
	}
	return nil
}

// Close closes the file.
func (s *Store) Close() error {
	s.stmts.close()
	s.pin.Close()
	err := s.db.Close()
	s.release.Do(func() { release(s.guard.id) })
	return err
}
