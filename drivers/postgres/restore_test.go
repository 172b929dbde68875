package postgres

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/pgtest"
)

// TestSessionIDsAcrossARestore: the schema put back from an older pg_dump
// as docs/drivers/postgres.md says (the schema dropped, the dump loaded
// with pg_restore), with a store left open across it, as no instance
// should be. Its lock session was made after the backup and is gone with
// it; the ticket sequence, which gives session ids too, went back, so each
// try of the store's would take an id, until they reached ids handed out
// before the restore by another store, which it would hand out again. It
// is refused with ErrCorrupt instead, and the sequence left where it is,
// until the fences are raised as storectl restore raises them. No session
// id or fence is handed out twice.
func TestSessionIDsAcrossARestore(t *testing.T) {
	srv := pgtest.Shared(t)
	schema := freshSchema("restore")
	ctx := t.Context()
	bin, err := pgtest.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	tool := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.CommandContext(ctx, filepath.Join(bin, name), args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}

	given := map[int64][]string{}
	note := func(v int64, what string) { given[v] = append(given[v], what) }
	lastSession := map[*driverStore]int64{}
	noteSession := func(s *driverStore, who string) {
		if se := s.locks.Current(); se != nil && se.id != lastSession[s] {
			lastSession[s] = se.id
			note(se.id, who+" session")
		}
	}
	lock := func(s *driverStore, who string) error {
		l, err := s.Lock(ctx, "job", who, true)
		noteSession(s, who)
		if err != nil {
			return err
		}
		note(l.Fence(), who+" fence")
		return l.Unlock(ctx)
	}
	mustLock := func(s *driverStore, who string) {
		t.Helper()
		if err := lock(s, who); err != nil {
			t.Fatalf("%s: %v", who, err)
		}
	}

	before := openAt(t, srv.ConnString(), schema, nil)
	mustLock(before, "before")
	before.Close()
	dump := filepath.Join(t.TempDir(), "ids.dump")
	tool("pg_dump", "-d", srv.ConnString(), "-n", schema, "-Fc", "-f", dump)

	open := openAt(t, srv.ConnString(), schema, nil) // left open across the restore
	mustLock(open, "open")
	after := openAt(t, srv.ConnString(), schema, nil)
	mustLock(after, "after")
	after.Close()

	tool("psql", "-d", srv.ConnString(), "-q", "-c", "DROP SCHEMA "+schema+" CASCADE")
	tool("pg_restore", "-d", srv.ConnString(), dump)
	for i := range 3 {
		if err := lock(open, fmt.Sprintf("open across the restore, try %d", i)); !errors.Is(err, driver.ErrCorrupt) {
			t.Errorf("Lock of the store open across the restore, try %d: %v; want ErrCorrupt", i, err)
		}
	}

	// storectl restore's raise of the lock fences (restoreLocks).
	floor, err := open.SealLocks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := open.RaiseLockFences(ctx, floor+1000); err != nil {
		t.Fatal(err)
	}
	mustLock(open, "open, raised")
	restarted := openAt(t, srv.ConnString(), schema, nil)
	mustLock(restarted, "restarted")

	for v, what := range given {
		if len(what) > 1 {
			t.Errorf("%d handed out %d times: %s", v, len(what), strings.Join(what, ", "))
		}
	}
	t.Logf("handed out: %v", given)
}
