package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cosid-go/store/driver"
)

// Backup copies the store in the file at path to a new file dest, while
// other processes keep using it: SQLite's VACUUM INTO reads one consistent
// snapshot, the -wal's commits included, which a copy of the file alone
// would miss. It refuses a path with no store (it creates none) and a dest
// that exists (it overwrites nothing). The copy is synced to disk, its
// name too, before Backup returns.
//
// The copy is marked as a backup (driver.BackupMarker) before it takes its
// name: it may be behind what the original hands out after it, so it
// opens for tools only and hands out nothing until `storectl restore`
// raises it past that and clears the mark (see the package documentation).
func Backup(ctx context.Context, path, dest string) error {
	src, err := checkPath(path)
	if err != nil {
		return err
	}
	if _, err := stat(src); err != nil {
		return fmt.Errorf("sqlite %s: no store to back up: %w", src, err)
	}
	dst, err := checkPath(dest)
	if err != nil {
		return fmt.Errorf("backup destination: %w", err)
	}
	if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
		if err == nil {
			return fmt.Errorf("backup destination %s exists: choose a new name (nothing is overwritten): %w", dst, driver.ErrInvalidArgument)
		}
		return fmt.Errorf("backup destination %s: %w", dst, err)
	}
	s, err := newDriver(ctx, src, 5*time.Second, false)
	if err != nil {
		return err
	}
	defer s.Close()
	id, err := s.StoreID(ctx)
	if err != nil {
		return fmt.Errorf("sqlite %s: %w", src, err)
	}
	tmp := dst + ".backup-" + driver.NewStoreID()[:8]
	defer os.Remove(tmp) // gone once it took its name
	// Through the store's own statement path: its mutex, and the check
	// that the file is still the store's before and after.
	if _, err := s.Store.DB().Exec(ctx, "VACUUM INTO ?1", tmp); err != nil {
		return fmt.Errorf("sqlite %s: backup to %s: %w", src, dst, err)
	}
	mark := fmt.Sprintf("copy of store %s taken at %s", id, time.Now().UTC().Format(time.RFC3339Nano))
	if err := markCopy(ctx, tmp, mark); err != nil {
		return fmt.Errorf("sqlite %s: backup to %s: %w", src, dst, err)
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	if err := renameNoReplace(tmp, dst); err != nil {
		return fmt.Errorf("backup destination %s: %w", dst, err)
	}
	return syncFile(dst)
}

// markCopy writes the backup mark into a copy no one else has opened.
func markCopy(ctx context.Context, path, mark string) error {
	c, err := sql.Open("sqlite", dsn(path, 5*time.Second, false))
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.ExecContext(ctx, "INSERT INTO cosid_meta (name, value) VALUES ('backup', ?1) ON CONFLICT (name) DO UPDATE SET value = ?1", mark)
	return err
}

// syncFile makes a finished file and its name durable. No SQLite
// connection has it open (VACUUM INTO closed it), so opening it here drops
// no lock.
func syncFile(path string) error {
	for _, p := range []string{path, filepath.Dir(path)} {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return fmt.Errorf("sync %s: %w", p, err)
		}
	}
	return nil
}

// RestoreFile puts a copy of the backup file at backup in place at path,
// for `storectl restore`: path must not exist (a damaged store is moved
// aside first, not overwritten). The copy is made beside path under a
// temporary name, marked as a backup, and given to raise, which opens it
// (create=false), raises it past everything handed out since the backup,
// and clears the mark; only a copy whose mark raise cleared takes the name
// path. Any failure leaves path absent and the backup untouched.
func RestoreFile(ctx context.Context, backup, path string, raise func(ctx context.Context, copyPath string) error) error {
	dst, err := checkPath(path)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
		if err == nil {
			return fmt.Errorf("%s exists: move it aside first (keep it: it may hold what the backup lacks); nothing is overwritten: %w",
				dst, driver.ErrInvalidArgument)
		}
		return err
	}
	s, err := newDriver(ctx, backup, 5*time.Second, false)
	if err != nil {
		return err
	}
	tmp := dst + ".restore-" + driver.NewStoreID()[:8]
	defer func() {
		for _, p := range []string{tmp, tmp + "-wal", tmp + "-shm"} {
			os.Remove(p)
		}
	}()
	mark, err := s.BackupMark(ctx)
	if err == nil {
		_, err = s.Store.DB().Exec(ctx, "VACUUM INTO ?1", tmp)
	}
	s.Close()
	if err != nil {
		return fmt.Errorf("sqlite %s: copy to %s: %w", backup, tmp, err)
	}
	if mark == "" { // a copy made by hand (sqlite3's VACUUM INTO): marked too
		mark = "restored from " + backup
	}
	if err := markCopy(ctx, tmp, mark); err != nil {
		return fmt.Errorf("sqlite %s: %w", tmp, err)
	}
	if err := raise(ctx, tmp); err != nil {
		return err
	}
	c, err := sql.Open("sqlite", dsn(tmp, 5*time.Second, false))
	if err != nil {
		return err
	}
	var left int
	err = c.QueryRowContext(ctx, "SELECT count(*) FROM cosid_meta WHERE name = 'backup'").Scan(&left)
	c.Close()
	switch {
	case err != nil:
		return fmt.Errorf("sqlite %s: %w", tmp, err)
	case left != 0:
		return fmt.Errorf("sqlite %s: the restored copy is still marked as a backup; %s left as it was", tmp, dst)
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	if err := renameNoReplace(tmp, dst); err != nil {
		return fmt.Errorf("%s: %w", dst, err)
	}
	return syncFile(dst)
}
