package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
)

// A backup taken while a store runs holds every value it handed out, the
// commits still in the -wal included; a store opened on it continues
// above them. Backup overwrites nothing and creates no store.
func TestBackup(t *testing.T) {
	dir := t.TempDir()
	path, dest := filepath.Join(dir, "ids.db"), filepath.Join(dir, "backup.db")
	s := open(t, path)
	ctx := context.Background()
	for range 3 {
		if _, err := s.Next(ctx, "k", 10); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("the commits are not in a -wal, so the test proves nothing: %v %v", fi, err)
	}
	if err := Backup(ctx, path, dest); err != nil {
		t.Fatal(err)
	}
	// The copy is marked as a backup: a program (create) cannot open it;
	// a tool (create=false) reads it, and it hands out nothing.
	if d, err := newDriver(ctx, dest, time.Second, true); !errors.Is(err, driver.ErrSealed) || !strings.Contains(err.Error(), "storectl restore") {
		if err == nil {
			d.Close()
		}
		t.Fatalf("opening the backup with create = %v; want ErrSealed saying to run storectl restore", err)
	}
	b, err := newDriver(ctx, dest, time.Second, false)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if next, _, err := b.Current(ctx, "k"); err != nil || next != 30 {
		t.Errorf("Current on the backup = %d, %v; want 30", next, err)
	}
	if m, err := b.BackupMark(ctx); err != nil || !strings.Contains(m, "copy of store ") {
		t.Errorf("the backup's mark = %q, %v", m, err)
	}
	if _, err := b.Next(ctx, "k", 10); !errors.Is(err, driver.ErrSealed) {
		t.Errorf("Next on the backup = %v; want ErrSealed", err)
	}
	if _, err := b.Advance(ctx, "k", 100); err != nil {
		t.Errorf("Advance on the backup (it only raises) = %v", err)
	}
	if err := b.ClearBackupMark(ctx); err != nil {
		t.Fatal(err)
	}
	if start, err := b.Next(ctx, "k", 10); err != nil || start != 100 {
		t.Errorf("Next once the mark is cleared = %d, %v; want 100", start, err)
	}
	if err := Backup(ctx, path, dest); err == nil || !strings.Contains(err.Error(), "exists: choose a new name") {
		t.Errorf("Backup onto an existing file = %v; want it refused", err)
	}
	missing := filepath.Join(dir, "missing.db")
	if err := Backup(ctx, missing, filepath.Join(dir, "b2.db")); err == nil || !strings.Contains(err.Error(), "no store to back up") {
		t.Errorf("Backup of a missing file = %v; want it refused", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Backup of a missing file created it: %v", err)
	}
	if err := Backup(ctx, path, " "); err == nil || !strings.Contains(err.Error(), "a file path is required") {
		t.Errorf("Backup to a blank path = %v; want it refused", err)
	}
}
