package mysql

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/mysqltest"
)

// TestSessionIDsAcrossARestore: the database put back from an older
// mysqldump as docs/drivers/mysql.md says (the database dropped, the dump
// loaded with the mysql client), with a store left open across it, as no
// instance should be. Its lock session was made after the backup and is
// gone with it; the counter of tickets and session ids went back, so the
// store's next session would take an id handed out before the restore
// (another store's watch of that session would carry over to it). It is
// refused with ErrCorrupt instead, as the ticket is, until the fences are
// raised as storectl restore raises them; then sessions and fences go on
// above everything handed out. No session id or fence is handed out twice.
func TestSessionIDsAcrossARestore(t *testing.T) {
	srv := mysqltest.Shared(t)
	database := srv.NewDatabase(t)
	ctx := t.Context()
	dir := t.TempDir()
	host, port, _ := strings.Cut(srv.Addr(), ":")
	cnf := filepath.Join(dir, "admin.cnf")
	if err := os.WriteFile(cnf, []byte("[client]\nhost="+host+"\nport="+port+"\nuser=root\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tool := func(name string, args ...string) {
		t.Helper()
		path, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("%v (make mariadb installs the client tools)", err)
		}
		args = append([]string{"--defaults-extra-file=" + cnf}, args...)
		if out, err := exec.CommandContext(ctx, path, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}

	// given holds every value of the counter a store was seen to use, a
	// session id or a fence, with what it was.
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

	before := openAt(t, srv.Addr(), database, nil)
	mustLock(before, "before")
	before.Close()
	dump := filepath.Join(dir, "ids.sql")
	tool("mysqldump", "--single-transaction", "--databases", database, "--result-file="+dump)

	open := openAt(t, srv.Addr(), database, nil) // left open across the restore
	mustLock(open, "open")
	after := openAt(t, srv.Addr(), database, nil)
	mustLock(after, "after")
	after.Close()

	tool("mysql", "--execute=DROP DATABASE `"+database+"`")
	tool("mysql", "--execute=source "+dump)
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
	restarted := openAt(t, srv.Addr(), database, nil)
	mustLock(restarted, "restarted")

	for v, what := range given {
		if len(what) > 1 {
			t.Errorf("%d handed out %d times: %s", v, len(what), strings.Join(what, ", "))
		}
	}
	t.Logf("handed out: %v", given)
}
