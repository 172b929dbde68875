// Package sqlite is the SQLite driver of package store, on the pure-Go
// modernc.org/sqlite (no C compiler needed): ranges, slot leases, seeding
// and purge in one file, for programs on one host that want IDs that
// survive restarts with no server. Several processes on the host may share
// the file.
//
// # Opening
//
//	import _ "github.com/cosid-go/store/drivers/sqlite"
//
//	st, err := store.Open("sqlite", map[string]string{"path": "/var/lib/app/ids.db"})
//
// or, without the registry:
//
//	st, err := sqlite.OpenStore(ctx, &sqlite.Options{Path: "/var/lib/app/ids.db"})
//
// # Options
//
//   - path (required): the database file, on a local file system. If
//     nothing is there, a new store is made under a temporary name beside
//     it and moved into place, so no process ever sees a half-made one.
//     Refused, and left unchanged: a blank path, ":memory:" (the memory
//     driver serves that), a URI ("file:", '?', '#'), a ".." element (after
//     a symlink the kernel takes it from the symlink's target, so the path
//     would name two files); a file that is not
//     SQLite, a SQLite database with tables but none of this store's, an
//     empty file (it may be a store someone emptied: remove it to start a
//     new store), a file with more than one hard link, a symlink to a
//     missing file.
//   - busyTimeout: how long a statement waits for another process's write
//     lock; default 5s; 0 (do not wait), or 1ms up to 596h (SQLite's limit).
//   - create (true): false opens only a file that holds a store already; a
//     missing file, or a SQLite file without this store's tables, fails
//     with ErrNotFound ("no store at PATH"), and nothing is created or
//     written.
//
// A store's identity (driver.Identifier) is the store_id row of its
// cosid_meta table: random, written with the tables; a file made before
// identities existed gets one at its next open with create.
//
// # One store, one file
//
// SQLite knows a database by its path, and keeps the newest commits in
// PATH-wal and the index the processes share in PATH-shm, named after the
// path. Two names of one file, a file replaced under a running store, or
// its -wal or -shm deleted, each make two databases that hand out the
// same values. So:
//
//   - The file's identity (device and inode) is taken at open. Every name
//     of it in a process (a symlink, a relative path) shares one mutex, so
//     stores of one file take turns instead of failing with SQLITE_BUSY.
//   - A hard link is refused at open: SQLite would give each name a WAL of
//     its own over the same pages.
//   - Before and after each statement, the store checks that the path still
//     names its file, with one link and not emptied, and that the -wal and
//     -shm are the ones it opened (it keeps a connection open so that SQLite
//     never deletes them while it runs). At the first change the store stops
//     for good: every call fails with ErrCorrupt naming what changed. A
//     value is handed out only when the check after its commit passed.
//   - Opening is refused when what is at the path shows the same: a -wal or
//     -shm without its file (the file was deleted or moved while in use), a
//     -shm without its -wal (the WAL was deleted, and the commits in it lost),
//     a -wal shorter than the frames the -shm counts as not yet in the file
//     (the WAL was emptied or cut in place),
//     a -shm in use by a process that does not have the file open (the file
//     was replaced under it), a file that a process has open with another
//     -shm (the file was renamed, or a hard link removed, under it, and its
//     newest commits are in the old name's -wal; or its -shm was deleted).
//     Open again once that process ended: a store stopped because its file
//     moved copies its -wal into the file when it closes, as SQLite would
//     have.
//
// # What SQLite cannot protect against
//
//   - Deleting the -wal and -shm files. After a crash the -wal holds commits
//     not yet in the file; with both files gone the store starts again
//     below values already handed out, and nothing shows it. Never delete
//     them: SQLite removes them when the last process closes the file.
//   - Network file systems (NFS, SMB, cloud file shares): SQLite's locks and
//     the shared -shm index do not work across hosts, and two hosts on one
//     file hand out the same values. Keep the file on a local disk; for
//     several hosts use the postgres or zookeeper driver.
//   - Copying the file while it is in use (cp, rsync, a file-level backup):
//     the newest commits are in the -wal, so the copy is older than what was
//     handed out, and restoring it hands those values out again.
//   - Restoring a backup by hand, or deleting the file: nothing in a file
//     tells that it is older than values handed out from it, nor that a
//     new one had a predecessor (a copy storectl backup made is marked, and
//     refuses to open until storectl restore raised it: see Backups). A running store stops when its file is replaced
//     (and its regression guard refuses a key that went back), but a store
//     opened after the restore starts from the backup. A copy written over
//     the file in place (cp onto it keeps its inode, and so its -wal and
//     -shm) is not seen as a replacement at all: only the regression guard
//     of a store that ran before it stops that store.
//   - Renaming or moving the file, or its directory, while in use, when a
//     process that has it open crashes: its newest commits stay in the old
//     name's -wal. Move the file only with every process stopped cleanly.
//   - A hard link made, or the file replaced, in the instant between a
//     store's check and its commit: the next call sees it.
//
// # Backups
//
// Copy through SQLite, which reads one consistent snapshot while the stores
// keep running (the commits still in the -wal included):
//
//	storectl backup /var/lib/app/ids.db /backup/ids-2026-12-01.db
//
// or from Go, sqlite.Backup(ctx, path, dest). The copy is marked as a
// backup (driver.BackupMarker): it is behind every value, fence and
// timestamp the store hands out after it, so a program cannot open it
// (ErrSealed, saying to run storectl restore) and a tool that opens it
// with create=false can read it (storectl inspect) but not take values,
// seal or migrate from it.
//
// To restore, stop every process using the store, move the damaged file
// aside with its -wal and -shm (keep them: they may hold what the backup
// lacks), then run one command:
//
//	storectl restore --raise 1000000 --no-moves /backup/ids-2026-12-01.db /var/lib/app/ids.db
//
// (--no-moves: nothing was migrated out since the backup; otherwise name
// each store keys moved to with --moved-to SPEC, and they are sealed.)
//
// It copies the backup to the path, raising the copy before it takes the
// name: every key not sealed by --raise (more than any key handed out after
// the backup: a day's worth for a nightly one), every slot's fence by the
// same, and every slot's next floor past any timestamp issued since; then
// it clears the mark. Keys created after the backup are not in it: name
// them with --key. A copy made by hand (sqlite3's VACUUM INTO, its .backup)
// is restored the same way. A copy moved over the file without storectl
// restore hands out again everything handed out after it was taken.
//
// # Durability
//
// The file is in WAL mode with synchronous=FULL: a Next that returned is on
// disk, through power loss; a new store's directory entry is synced too.
// The store's clock is the host's clock, the same for every process on the
// host.
//
// # Platforms
//
// The file's identity comes from stat(2), on every Unix. The new store is
// moved into place with Linux's renameat2(RENAME_NOREPLACE); elsewhere by a
// hard link then removing the temporary name, so a process opening it in
// that instant is refused for two links and may retry. A process that has
// the file open under another name is found through Linux's /proc/locks
// only (where it cannot be read, nothing is refused). On other systems
// (Windows) Open refuses with ErrUnsupported.
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
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers database/sql driver "sqlite"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
	"github.com/cosid-go/store/internal/sqlstore/sqlitedialect"
)

func init() { store.Register("sqlite", fromOptions) }

// driverStore is an open SQLite store. It implements driver.Store,
// driver.RangeStore, driver.RangeAdvancer, driver.SlotLeaseStore,
// driver.SlotSeeder, driver.Purger, driver.BackupMarker and driver.Pinger.
type driverStore struct {
	*sqlstore.Store
	db    *sql.DB
	pin   *sql.Conn // the connection that keeps the -wal and -shm files
	stmts *stmtCache
	guard *fileGuard
	// release uncounts the store once (see inUse), on the first Close.
	release sync.Once
	mark    marked // a backup copy (backupmark.go)
}

var _ sqlstore.Capabilities = (*driverStore)(nil)

// The busyTimeout option's default and bound (SQLite keeps milliseconds
// in an int32).
const (
	defaultBusyTimeout = 5 * time.Second
	maxBusyTimeout     = 596 * time.Hour
)

// fromOptions opens a store from options (see the package documentation). It is
// the driver's factory.
func fromOptions(options map[string]string) (driver.Store, error) {
	o := driver.NewOptions(options)
	path := o.String("path", "")
	busy := o.Duration("busyTimeout", defaultBusyTimeout, 0, maxBusyTimeout)
	create := o.Bool(driver.OptionCreate, true)
	if err := o.Err(); err != nil {
		return nil, err
	}
	return newDriver(context.Background(), path, busy, create)
}

// dialect is SQLite's (package sqlitedialect).
var dialect = sqlitedialect.New()

// newDriver opens the store in the file at path; without create, only a
// file holding a store is opened, and nothing is created or written.
func newDriver(ctx context.Context, path string, busyTimeout time.Duration, create bool) (*driverStore, error) {
	path, err := checkPath(path)
	if err != nil {
		return nil, err
	}
	if err := checkBusyTimeout(busyTimeout); err != nil {
		return nil, err
	}
	fi, real, err := openFile(ctx, path, busyTimeout, create)
	if err != nil {
		return nil, err
	}
	if err := claim(path, real, fi.id); err != nil {
		return nil, err
	}
	s, err := openClaimed(ctx, path, real, fi.id, busyTimeout, create)
	if err != nil {
		release(fi.id)
		return nil, err
	}
	return s, nil
}

// openClaimed opens the store in the file New found and claimed.
func openClaimed(ctx context.Context, path, real string, id fileID, busyTimeout time.Duration, create bool) (*driverStore, error) {
	mu := fileLock(id)
	// Checked before WAL mode is set, which would rewrite a foreign file's
	// header.
	if err := precheck(ctx, path, busyTimeout, mu, create); err != nil {
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
	if err := noStranger(g); err != nil {
		pin.Close()
		sdb.Close()
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	stmts := &stmtCache{db: sdb, m: map[string]*sql.Stmt{}}
	sqlOpen := sqlstore.Open
	if !create {
		sqlOpen = sqlstore.OpenExisting
	}
	s, err := sqlOpen(ctx, db{q: sdb, mu: mu, stmts: stmts, g: g}, dialect)
	if err != nil {
		stmts.close()
		pin.Close()
		sdb.Close()
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	d := &driverStore{Store: s, db: sdb, pin: pin, stmts: stmts, guard: g}
	// A backup copy opens for tools only (driver.BackupMarker).
	m, err := readMark(ctx, s.DB())
	if err == nil && m != "" && create {
		err = backupRefusal(path, m)
	}
	if err != nil {
		stmts.close()
		pin.Close()
		sdb.Close()
		return nil, err
	}
	d.mark.on.Store(m != "")
	return d, nil
}

// precheck reads the file without changing it: it must be SQLite, and
// either empty, or this store's at a schema version this code knows.
// Without create, it must be this store's.
func precheck(ctx context.Context, path string, busyTimeout time.Duration, mu *sync.Mutex, create bool) error {
	sdb, err := sql.Open("sqlite", dsn(path, busyTimeout, false))
	if err != nil {
		return fmt.Errorf("sqlite %s: %w", path, err)
	}
	defer sdb.Close()
	err = sqlstore.Check(ctx, db{q: sdb, mu: mu}, dialect)
	if dialect.Kind(err) == sqlstore.NotADatabase {
		return fmt.Errorf("sqlite %s: not a SQLite database, refusing to touch it: %v: %w", path, err, driver.ErrConfigMismatch)
	}
	if err != nil {
		return fmt.Errorf("sqlite %s: %w", path, err)
	}
	if !create {
		var has bool
		if err := (db{q: sdb, mu: mu}).QueryRow(ctx, dialect.HasMeta).Scan(&has); err != nil {
			return fmt.Errorf("sqlite %s: %w", path, err)
		}
		if !has {
			return fmt.Errorf("sqlite: no store at %s: the file has no cosid tables, and create=false creates none: %w", path, driver.ErrNotFound)
		}
	}
	return nil
}

// Close closes the file.
func (s *driverStore) Close() error {
	s.stmts.close()
	if s.guard.strandedWAL() {
		// What SQLite would do on closing, had the file not moved: the
		// file, under its new name, then holds every commit.
		_, _ = s.pin.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
	}
	s.pin.Close()
	err := s.db.Close()
	s.release.Do(func() { release(s.guard.id) })
	return err
}
