package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	if start, err := open(t, dest).Next(ctx, "k", 10); err != nil || start != 30 {
		t.Errorf("Next on the backup = %d, %v; want 30", start, err)
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
