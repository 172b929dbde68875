package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cosid-go/store/driver"
)

// TestCreateFalse: with create=false a missing file, or a SQLite file
// without the store's tables, is no store (ErrNotFound) and stays as it
// was; an existing store opens, with the identity it was created with.
func TestCreateFalse(t *testing.T) {
	dir := t.TempDir()
	readOnly := func(path string) (driver.Store, error) {
		return fromOptions(map[string]string{"path": path, "create": "false"})
	}
	missing := filepath.Join(dir, "missing.db")
	if _, err := readOnly(missing); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("create=false on a missing file: %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("create=false made the file: %v", err)
	}
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readOnly(empty); !errors.Is(err, driver.ErrConfigMismatch) {
		t.Fatalf("create=false on an empty file: %v, want it refused as with create", err)
	}
	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Fatalf("create=false changed the empty file: %v %v", fi, err)
	}
	// Someone else's database stays refused as such.
	other := filepath.Join(dir, "other.db")
	writeSQLite(t, other, "CREATE TABLE t (x)")
	before, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readOnly(other); !errors.Is(err, driver.ErrConfigMismatch) {
		t.Fatalf("create=false on another program's database: %v, want ErrConfigMismatch", err)
	}
	if after, err := os.ReadFile(other); err != nil || string(after) != string(before) {
		t.Fatalf("create=false changed the file (%v)", err)
	}

	path := filepath.Join(dir, "ids.db")
	id, err := open(t, path).StoreID(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	d, err := readOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got, err := d.(*driverStore).StoreID(t.Context()); err != nil || got != id {
		t.Fatalf("identity through create=false: %q (%v), want %q", got, err, id)
	}
}

// TestIdentityOldFile: a store made before identities existed (no
// store_id row) has none through create=false, which writes none; the
// next open with create gives it one, which stays.
func TestIdentityOldFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	open(t, path).Close()
	writeSQLite(t, path, "DELETE FROM cosid_meta WHERE name = 'store_id'")
	d, err := fromOptions(map[string]string{"path": path, "create": "false"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.(*driverStore).StoreID(t.Context()); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("identity of an old file through create=false: %v, want ErrNotFound", err)
	}
	if _, err := d.(*driverStore).StoreID(t.Context()); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("create=false wrote an identity: %v", err)
	}
	d.Close()
	id, err := open(t, path).StoreID(t.Context())
	if err != nil || len(id) != 32 {
		t.Fatalf("identity after an open with create: %q (%v)", id, err)
	}
	if again, err := open(t, path).StoreID(t.Context()); err != nil || again != id {
		t.Fatalf("identity at the next open: %q (%v), want %q", again, err, id)
	}
}
