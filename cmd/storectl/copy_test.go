package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestMigrateIntoCopy: a copy of a SQLite store (cp, with every instance
// stopped) carries the store's identity, so migrate refuses it as the same
// store, changing neither, and says a copy must not serve beside its
// original: both would hand out the same values.
func TestMigrateIntoCopy(t *testing.T) {
	dir := t.TempDir()
	orig := storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(dir, "ids.db")}}
	cp := storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(dir, "copy.db")}}
	exe(t, with(args("init"), orig.flags(), args("orders", "100"))...).want(t, exitOK, "initialised at 100")
	copyFile(t, orig.options["path"], cp.options["path"])
	for _, pair := range [][2]storeSpec{{orig, cp}, {cp, orig}} {
		exe(t, "migrate", "--from", pair[0].spec(), "--to", pair[1].spec()).want(t, exitRefused,
			"are the same store", "or one is a copy of the other", "nothing changed", "must never serve beside its original")
	}
	for _, s := range []storeSpec{orig, cp} {
		if next, sealed, err := s.open(t).Ranges().Current(t.Context(), "orders"); err != nil || sealed || next != 100 {
			t.Fatalf("%s after the refused migrations: next %d, sealed %v (%v); want 100, not sealed", s.options["path"], next, sealed, err)
		}
	}
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
