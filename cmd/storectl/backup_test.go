package main

import (
	"path/filepath"
	"testing"
)

// backup copies a SQLite store in use, with its newest commits, to a new
// file, and overwrites nothing.
func TestBackup(t *testing.T) {
	dir := t.TempDir()
	src := storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(dir, "ids.db")}}
	dest := filepath.Join(dir, "backup.db")
	next(t, src.open(t), "orders", 100)
	ctl("backup", src.options["path"], dest).want(t, exitOK, "backed up")
	copied := storeSpec{driver: "sqlite", options: map[string]string{"path": dest}}
	if r := next(t, copied.open(t), "orders", 1); r.Start != 100 {
		t.Fatalf("first range of the copy %v, want it to start at 100", r)
	}
	ctl("backup", src.options["path"], dest).want(t, exitUsage, "exists: choose a new name")
	ctl("backup", src.options["path"]).want(t, exitUsage, "want FILE and DEST")
}
