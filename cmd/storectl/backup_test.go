package main

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/cosid-go/store"
)

// backup copies a SQLite store in use, with its newest commits, to a new
// file marked as a backup, and overwrites nothing.
func TestBackup(t *testing.T) {
	dir := t.TempDir()
	src := storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(dir, "ids.db")}}
	dest := filepath.Join(dir, "backup.db")
	next(t, src.open(t), "orders", 100)
	ctl("backup", src.options["path"], dest).want(t, exitOK, "backed up")
	// The copy holds the newest commits, and is marked: a program cannot
	// open it, a tool reads it (TestRestoreAsDocumented restores it).
	if _, err := store.Open("sqlite", map[string]string{"path": dest}); !errors.Is(err, store.ErrSealed) {
		t.Fatalf("a program opening the backup copy: %v, want ErrSealed", err)
	}
	ctl("inspect", "--driver", "sqlite", "-o", "path="+dest).want(t, exitOK, "backup copy of store ", "orders  100   no")
	ctl("backup", src.options["path"], dest).want(t, exitUsage, "exists: choose a new name")
	ctl("backup", src.options["path"]).want(t, exitUsage, "want FILE and DEST")
}
