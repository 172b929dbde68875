package sqlite

import (
	"context"
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
// A restored copy hands out again every value handed out after it was
// taken: see the package documentation.
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
	// Through the store's own statement path: its mutex, and the check
	// that the file is still the store's before and after.
	if _, err := s.Store.DB().Exec(ctx, "VACUUM INTO ?1", dst); err != nil {
		return fmt.Errorf("sqlite %s: backup to %s: %w", src, dst, err)
	}
	return syncFile(dst)
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
