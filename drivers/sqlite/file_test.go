package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
)

func open(t *testing.T, path string) *driverStore {
	t.Helper()
	d, err := fromOptions(map[string]string{"path": path})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { d.Close() })
	return d.(*driverStore)
}

// writeSQLite makes a SQLite file with the given statements.
func writeSQLite(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// A file that is not a store's is refused with a clear error and left
// byte for byte as it was: a text file, someone else's SQLite database,
// and a store of a newer schema version.
func TestRefusesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("not a database\n", 400)), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.db")
	writeSQLite(t, other, "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total INTEGER)", "INSERT INTO invoices VALUES (1, 99)")
	newer := filepath.Join(dir, "newer.db")
	open(t, newer).Close()
	writeSQLite(t, newer, "UPDATE cosid_meta SET value = '4' WHERE name = 'schema_version'")
	for _, c := range []struct {
		path, want string
		is         error
	}{
		{text, "not a SQLite database", driver.ErrConfigMismatch},
		{other, "not a cosid store: the database has tables (invoices)", driver.ErrConfigMismatch},
		{newer, "schema version 4, newer than this driver's 3", driver.ErrConfigMismatch},
	} {
		before := snapshot(t, c.path)
		_, err := fromOptions(map[string]string{"path": c.path})
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, c.is) {
			t.Errorf("Open(%s) = %v; want an error saying %q, wrapping %v", filepath.Base(c.path), err, c.want, c.is)
		}
		if after := snapshot(t, c.path); !bytes.Equal(before, after) {
			t.Errorf("Open(%s) changed the file", filepath.Base(c.path))
		}
	}
}

// snapshot reads a file with its WAL and shared-memory companions.
func snapshot(t *testing.T, path string) []byte {
	t.Helper()
	var out []byte
	for _, p := range []string{path, path + "-wal", path + "-journal"} {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		out = append(append(out, []byte(p)...), b...)
	}
	return out
}

// The file is in WAL mode with synchronous=FULL on every connection.
func TestDurabilitySettings(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "ids.db"))
	var mode string
	var sync int
	ctx := context.Background()
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" || sync != 2 {
		t.Fatalf("journal_mode %q, synchronous %d; want wal and 2 (FULL)", mode, sync)
	}
}

// A purge deletes everything but the slot fences' floor: a slot's next
// term after a purge gets a fence above every fence purged.
func TestPurgeKeepsSlotFences(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "ids.db"))
	ctx := context.Background()
	ns := driver.Namespace{Name: "w", Limit: 4, Tolerance: time.Millisecond}
	req := driver.AcquireRequest{Namespace: ns, Owner: "o", Incarnation: "i", TTL: time.Minute, Preferred: 2}
	var last driver.Lease
	for range 3 {
		l, err := s.Acquire(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, l, l.Floor); err != nil { // next floor not ahead: see driver.Purger
			t.Fatal(err)
		}
		last = l
	}
	if _, err := s.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := s.Acquire(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if l.Fence <= last.Fence {
		t.Fatalf("fence after the purge %d, not above %d from before", l.Fence, last.Fence)
	}
}

// A purge whose fence floor is math.MaxInt64 leaves no slot a term can
// start in: Acquire gives ErrExhausted, as for any slot whose fence cannot
// grow, not a wrapped fence reported as ErrCorrupt. (Found by the TCK's
// random histories.)
func TestPurgeAtTheLastFence(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "ids.db"))
	ctx := context.Background()
	ns := driver.Namespace{Name: "w", Limit: 2}
	if err := s.SeedSlot(ctx, ns, 0, math.MaxInt64-1, 0); err != nil {
		t.Fatal(err)
	}
	req := driver.AcquireRequest{Namespace: ns, Owner: "o", Incarnation: "i", TTL: time.Minute}
	l, err := s.Acquire(ctx, req)
	if err != nil || l.Fence != math.MaxInt64 {
		t.Fatalf("Acquire = fence %d, %v; want fence %d", l.Fence, err, int64(math.MaxInt64))
	}
	if err := s.Release(ctx, l, l.Floor); err != nil { // next floor not ahead: see driver.Purger
		t.Fatal(err)
	}
	if _, err := s.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	req.Namespace.Name = "v"
	if l, err := s.Acquire(ctx, req); !errors.Is(err, driver.ErrExhausted) {
		t.Fatalf("Acquire after the purge = fence %d, %v; want ErrExhausted", l.Fence, err)
	}
	// The namespace was created all the same, as by any Acquire.
	if nss, err := s.Namespaces(ctx); err != nil || len(nss) != 1 || nss[0].Name != "v" {
		t.Fatalf("Namespaces = %v, %v; want the namespace v", nss, err)
	}
}

// TestPurgedUnderSealInit: a store open across a purge refuses Seal and
// Init of a key it saw higher before (ErrCorrupt: the key went back), and
// writes nothing: the key stays gone, neither sealed nor created at 0.
// (Found by the TCK's random histories: the refused write stayed.)
func TestPurgedUnderSealInit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ids.db")
	a, op := open(t, path), open(t, path)
	ctx := context.Background()
	if _, err := a.Next(ctx, "k", 5); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	if next, err := a.Seal(ctx, "k"); !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("Seal of a key purged under the store = %d, %v; want ErrCorrupt", next, err)
	}
	if err := a.Init(ctx, "k", 0); !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("Init(0) of a key purged under the store = %v; want ErrCorrupt", err)
	}
	if keys, err := op.Keys(ctx); err != nil || len(keys) != 0 {
		t.Fatalf("Keys after the refused Seal and Init = %q, %v; want none: a refused call wrote", keys, err)
	}
}

// TestUpgradeFromVersion1: a file of schema version 1 (before the namespace
// seal and the record of used slots) opens, with create=false as storectl
// opens a migration's source and with create=true: its tables are upgraded
// to version 3 in place, its namespaces and slots kept, unsealed and
// recorded as used, and sealing then works.
func TestUpgradeFromVersion1(t *testing.T) {
	ctx := context.Background()
	for _, create := range []string{"false", "true"} {
		t.Run("create="+create, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "v1.db")
			d := open(t, path)
			ns := driver.Namespace{Name: "workers", Limit: 2}
			l, err := d.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "i", TTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			d.Close()
			writeSQLite(t, path, "ALTER TABLE cosid_namespace DROP COLUMN sealed", "DROP TABLE cosid_slot_used",
				"UPDATE cosid_meta SET value = '1' WHERE name = 'schema_version'")

			o, err := fromOptions(map[string]string{"path": path, driver.OptionCreate: create})
			if err != nil {
				t.Fatalf("open of a version 1 file: %v", err)
			}
			defer o.Close()
			d = o.(*driverStore)
			nss, err := d.Namespaces(ctx)
			if err != nil || len(nss) != 1 || nss[0] != ns {
				t.Fatalf("Namespaces after the upgrade: %+v, %v; want [%+v]", nss, err, ns)
			}
			if _, err := d.Renew(ctx, l); err != nil {
				t.Fatalf("Renew of a term taken before the upgrade: %v", err)
			}
			if err := d.SealNamespace(ctx, ns.Name); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Renew(ctx, l); !errors.Is(err, driver.ErrSealed) {
				t.Fatalf("Renew after the seal: %v, want ErrSealed", err)
			}
			var v string
			if err := d.DB().QueryRow(ctx, "SELECT value FROM cosid_meta WHERE name = 'schema_version'").Scan(&v); err != nil || v != "3" {
				t.Fatalf("schema_version after the upgrade: %q, %v; want 3", v, err)
			}
			var used int
			if err := d.DB().QueryRow(ctx, "SELECT count(*) FROM cosid_slot_used WHERE namespace = 'workers' AND slot = ?1", l.Slot).Scan(&used); err != nil || used != 1 {
				t.Fatalf("slot %d, used before the upgrade, recorded %d times, %v; want once", l.Slot, used, err)
			}
		})
	}
}

// TestSealSurvivesDeletedNamespaceRow: an operator deletes the row of a
// sealed namespace by hand (its slot rows stay). Neither a held term's
// Renew nor another store's SeedSlot or Acquire may take that as "not sealed": a
// namespace row missing beside its slots' history is corrupt, not a fresh
// namespace.
func TestSealSurvivesDeletedNamespaceRow(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "seal.db")
	a, b := open(t, path), open(t, path)
	ns := driver.Namespace{Name: "workers", Limit: 4, Tolerance: time.Second}
	l, err := a.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "i", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SealNamespace(ctx, ns.Name); err != nil {
		t.Fatal(err)
	}
	if n, err := b.DB().Exec(ctx, "DELETE FROM cosid_namespace WHERE name = 'workers'"); err != nil || n != 1 {
		t.Fatalf("delete the namespace row: %d rows, %v", n, err)
	}
	if _, err := a.Renew(ctx, l); !errors.Is(err, driver.ErrLeaseLost) {
		t.Errorf("Renew after the sealed namespace's row was deleted: %v; want ErrLeaseLost", err)
	}
	if err := b.SeedSlot(ctx, ns, 2, 10, 10); !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("SeedSlot after the sealed namespace's row was deleted: %v; want ErrCorrupt", err)
	}
	l2, err := b.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "b", Incarnation: "j", TTL: time.Minute})
	if !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("Acquire after the sealed namespace's row was deleted: slot %d fence %d, %v; want ErrCorrupt", l2.Slot, l2.Fence, err)
	}
}
