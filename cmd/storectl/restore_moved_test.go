package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRestoreBackupOlderThanMigrate: a key and a namespace moved to another
// store with migrate --key/--namespace after the nightly backup was taken;
// then the store is lost and restored from that backup as documented. The
// backup holds the key and the namespace unsealed, so restore raises them and
// the restored store hands them out again beside the store they moved to:
// an instance still pointed here (the case seals exist for) gets values
// and (slot, millisecond) windows that the other store hands out too.
// Wanted: nothing moved out after the backup comes back to life (restore
// learns the moves, from the damaged file or the target, or refuses).
// restore refuses until told: --moved-to names the store of the migrate,
// and restore seals what that store has instead of raising it.
func TestRestoreBackupOlderThanMigrate(t *testing.T) {
	dir := t.TempDir()
	path, backup := filepath.Join(dir, "ids.db"), filepath.Join(dir, "nightly.db")
	moved := "sqlite:path=" + filepath.Join(dir, "other.db")
	h := newHandedOut()
	if e := h.instance(t, path, "next:orders:10:3,term:a"); e != "" {
		t.Fatal(e)
	}
	exe(t, "backup", path, backup).want(t, exitOK, "backed up ")
	exe(t, "migrate", "--key", "orders", "--namespace", "workers", "--from", "sqlite:path="+path, "--to", moved).
		want(t, exitOK, "key orders: sealed in source at 30")
	if e := h.instance(t, filepath.Join(dir, "other.db"), "next:orders:10:150,term:b"); e != "" {
		t.Fatal(e)
	}
	// The store is lost; every instance is stopped; the documented restore.
	for _, s := range []string{"", "-wal", "-shm"} {
		if err := os.Rename(path+s, filepath.Join(dir, "damaged.db"+s)); err != nil && s == "" {
			t.Fatal(err)
		}
	}
	// restore asks where things moved since the backup; the operator
	// names the store of the migrate.
	exe(t, "restore", "--raise", "1000", backup, path).want(t, exitUsage, "--moved-to SPEC", "--no-moves", "nothing changed")
	exe(t, "restore", "--raise", "1000", "--moved-to", "sqlite:path="+path+".damaged", backup, path).want(t, exitFailed, "no store at")
	exe(t, "restore", "--raise", "1000", "--moved-to", "sqlite:path="+filepath.Join(dir, "damaged.db"), backup, path).
		want(t, exitRefused, "itself or a copy of it", "nothing changed")
	exe(t, "restore", "--raise", "1000", "--moved-to", moved, backup, path).want(t, exitOK,
		"key orders: sealed at 30 (it moved to ", "namespace workers: sealed (it moved to ", "restored ")
	// An instance left pointed at the old store, then one on the other.
	e := h.instance(t, path, "next:orders:10:3,term:c")
	if e2 := h.instance(t, filepath.Join(dir, "other.db"), "term:d"); e2 != "" {
		t.Fatal(e2)
	}
	if v, f, o := h.duplicates(); v+f+o > 0 {
		t.Fatalf("after restoring a backup older than a migrate: %d values of %d handed out twice, %d fences twice, %d overlapping terms (instance on the restored store: %q)",
			v, h.total(), f, o, e)
	}
}
