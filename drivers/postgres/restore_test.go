package postgres

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/sqllocks"
)

// dumpSchema backs schema up with pg_dump and returns its restore as
// docs/drivers/postgres.md says: the schema dropped, the dump loaded with
// pg_restore (sqllocks' SessionIDsAcrossARestore).
func dumpSchema(t *testing.T, srv sqllocks.Server, schema string) (restore func()) {
	t.Helper()
	bin, err := pgtest.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	conn := srv.(*pgtest.Server).ConnString()
	tool := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.CommandContext(t.Context(), filepath.Join(bin, name), args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	dump := filepath.Join(t.TempDir(), "ids.dump")
	tool("pg_dump", "-d", conn, "-n", schema, "-Fc", "-f", dump)
	return func() {
		t.Helper()
		tool("psql", "-d", conn, "-q", "-c", "DROP SCHEMA "+schema+" CASCADE")
		tool("pg_restore", "-d", conn, dump)
	}
}

// sessionID is the id of the lock session s holds its locks on, 0 if none.
func sessionID(s sqllocks.Store) int64 {
	if se := s.(*driverStore).locks.Current(); se != nil {
		return se.id
	}
	return 0
}
