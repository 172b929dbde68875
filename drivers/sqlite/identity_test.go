package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cosid-go/store/driver"
)

// Paths and busy timeouts that would not give one store in one file, or
// not the wait asked for, are refused, naming the option.
func TestOptionsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "missing.db"), filepath.Join(dir, "dangling.db")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		opts map[string]string
		want string
		is   error
	}{
		{map[string]string{}, `option "path": value "": a file path is required`, driver.ErrInvalidArgument},
		{map[string]string{"path": "  "}, `option "path": value "  ": a file path is required`, driver.ErrInvalidArgument},
		{map[string]string{"path": ":memory:"}, "the memory driver serves that", driver.ErrInvalidArgument},
		{map[string]string{"path": "file:ids.db"}, "a file path, not a URI", driver.ErrInvalidArgument},
		{map[string]string{"path": "FILE:ids.db"}, "a file path, not a URI", driver.ErrInvalidArgument},
		{map[string]string{"path": "ids.db?mode=memory"}, "'?', '#' and NUL are not allowed", driver.ErrInvalidArgument},
		{map[string]string{"path": filepath.Join(dir, "ids.db") + " "}, "leading or trailing white space", driver.ErrInvalidArgument},
		{map[string]string{"path": filepath.Join(dir, "a.db"), "busyTimeout": "1000h"}, `option "busyTimeout": value "1000h": must be between 0s and 596h`, driver.ErrInvalidArgument},
		{map[string]string{"path": filepath.Join(dir, "a.db"), "busyTimeout": "500us"}, `option "busyTimeout": value "500µs": must be 0 or from 1ms to`, driver.ErrInvalidArgument},
		{map[string]string{"path": dir}, "not a regular file", driver.ErrConfigMismatch},
		{map[string]string{"path": filepath.Join(dir, "dangling.db")}, "a symlink to a missing file", driver.ErrConfigMismatch},
	} {
		d, err := fromOptions(c.opts)
		if err == nil {
			d.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%q) = %v; want an error saying %q", c.opts, err, c.want)
		}
		if err != nil && !errors.Is(err, c.is) {
			t.Errorf("Open(%q) = %v; want it to wrap %v", c.opts, err, c.is)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "a.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused busyTimeout created the file: %v", err)
	}
	// The longest wait SQLite can hold is accepted.
	d, err := fromOptions(map[string]string{"path": filepath.Join(dir, "b.db"), "busyTimeout": "596h"})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
}

// An existing empty file is not taken for a new store: it may be a store
// someone emptied.
func TestEmptyFileRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ids.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := fromOptions(map[string]string{"path": path})
	if err == nil || !strings.Contains(err.Error(), "the file exists and is empty: remove it to start a new store") {
		t.Fatalf("Open of an empty file = %v; want it refused", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("the refused file changed: %v, %v", fi, err)
	}
}

// Stores opened on one file through a symlink, a relative path and the
// file's own path share one mutex, so they take turns instead of failing
// with SQLITE_BUSY under a short busy timeout.
func TestNamesShareMutex(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ids.db")
	if err := os.Symlink("ids.db", filepath.Join(dir, "link.db")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	var stores []*driverStore
	for _, p := range []string{path, filepath.Join(dir, "link.db"), "ids.db", "./link.db"} {
		d, err := fromOptions(map[string]string{"path": p, "busyTimeout": "1ms"})
		if err != nil {
			t.Fatalf("Open(%s): %v", p, err)
		}
		t.Cleanup(func() { d.Close() })
		stores = append(stores, d.(*driverStore))
	}
	mu := stores[0].Store.DB().(db).mu
	for i, s := range stores[1:] {
		if s.Store.DB().(db).mu != mu {
			t.Errorf("store %d has a mutex of its own", i+1)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for _, s := range stores {
		for range 2 {
			wg.Go(func() {
				for range 100 {
					if _, err := s.Next(context.Background(), "k", 1); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var next int64
	if err := stores[0].db.QueryRow("SELECT next FROM cosid_range WHERE key = 'k'").Scan(&next); err != nil || next != 800 {
		t.Errorf("next = %d, %v; want 800 from 4 stores × 2 goroutines × 100 calls", next, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "link.db-wal")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a -wal file beside the symlink: %v", err)
	}
}

// Within one process: a store whose file is replaced, or whose symlink is
// pointed at another store's file, stops; a store opened on the replaced
// path while the first still has the old file open is refused.
func TestReplacedInProcess(t *testing.T) {
	ctx := context.Background()
	t.Run("file", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "ids.db")
		s1 := open(t, path)
		if _, err := s1.Next(ctx, "k", 10); err != nil {
			t.Fatal(err)
		}
		copyStore(t, path, filepath.Join(dir, "copy.db"))
		if err := os.Rename(filepath.Join(dir, "copy.db"), path); err != nil {
			t.Fatal(err)
		}
		if _, err := fromOptions(map[string]string{"path": path}); err == nil || !strings.Contains(err.Error(), "belongs to another file this process has open") {
			t.Errorf("Open of the replaced path = %v; want it refused", err)
		}
		if start, err := s1.Next(ctx, "k", 10); !errors.Is(err, driver.ErrCorrupt) {
			t.Errorf("Next after the file was replaced = %d, %v; want ErrCorrupt", start, err)
		}
	})
	// SQLite shares the -shm of one inode within a process, whatever its
	// name, but opens the -wal by name: the new name's store would read the
	// old name's index over an empty -wal.
	t.Run("renamed", func(t *testing.T) {
		dir := t.TempDir()
		a, b := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
		s1 := open(t, a)
		if _, err := s1.Next(ctx, "k", 10); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(a, b); err != nil {
			t.Fatal(err)
		}
		want := "this process has the file open as " + a
		if d, err := fromOptions(map[string]string{"path": b}); !errors.Is(err, driver.ErrCorrupt) || !strings.Contains(err.Error(), want) {
			if err == nil {
				d.Close()
			}
			t.Errorf("Open of the renamed file = %v; want ErrCorrupt saying %q", err, want)
		}
		if start, err := s1.Next(ctx, "k", 10); !errors.Is(err, driver.ErrCorrupt) {
			t.Errorf("Next after the file was renamed = %d, %v; want ErrCorrupt", start, err)
		}
	})
	t.Run("symlink", func(t *testing.T) {
		dir := t.TempDir()
		a, b, link := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db"), filepath.Join(dir, "ids.db")
		open(t, a).Close()
		open(t, b).Close()
		if err := os.Symlink(a, link); err != nil {
			t.Fatal(err)
		}
		s := open(t, link)
		if _, err := s.Next(ctx, "k", 10); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(link); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(b, link); err != nil {
			t.Fatal(err)
		}
		if start, err := s.Next(ctx, "k", 10); !errors.Is(err, driver.ErrCorrupt) || !strings.Contains(err.Error(), "the path names another file now") {
			t.Errorf("Next after the symlink was pointed elsewhere = %d, %v; want ErrCorrupt", start, err)
		}
	})
}

// A path with a ".." element after a symlink names, for the kernel (and
// a shell), the directory above the symlink's target, while a lexical
// clean of it names the directory above the symlink: the store would be
// made or opened in another file than the one the path reaches, and
// start again at 0 beside the store the operator meant.
func TestDotDotRefused(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "a", "b"), filepath.Join(root, "l")); err != nil {
		t.Fatal(err)
	}
	s := open(t, filepath.Join(root, "a", "ids.db"))
	if _, err := s.Next(ctx, "k", 10); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "l") + "/../ids.db" // the kernel reaches a/ids.db
	d, err := fromOptions(map[string]string{"path": path})
	if err == nil {
		start, nerr := d.(*driverStore).Next(ctx, "k", 10)
		d.Close()
		t.Errorf("Open(%q) opened a store (Next = %d, %v, where a/ids.db, the file the path reaches, handed out 0 already); want it refused", path, start, nerr)
	} else if want := `".." element`; !errors.Is(err, driver.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
		t.Errorf("Open(%q) = %v; want ErrInvalidArgument saying %q", path, err, want)
	}
	if _, err := os.Stat(filepath.Join(root, "ids.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a store was made at the path cleaned lexically: %v", err)
	}
}
