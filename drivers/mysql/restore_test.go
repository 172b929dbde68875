package mysql

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cosid-go/store/internal/testing/sqllocks"
)

// dumpDatabase backs database up with mysqldump and returns its restore
// as docs/drivers/mysql.md says: the database dropped, the dump loaded
// with the mysql client (sqllocks' SessionIDsAcrossARestore).
func dumpDatabase(t *testing.T, srv sqllocks.Server, database string) (restore func()) {
	t.Helper()
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
		if out, err := exec.CommandContext(t.Context(), path, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	dump := filepath.Join(dir, "ids.sql")
	tool("mysqldump", "--single-transaction", "--databases", database, "--result-file="+dump)
	return func() {
		t.Helper()
		tool("mysql", "--execute=DROP DATABASE `"+database+"`")
		tool("mysql", "--execute=source "+dump)
	}
}

// sessionID is the id of the lock session s holds its locks on, 0 if none.
func sessionID(s sqllocks.Store) int64 {
	if se := s.(*driverStore).locks.Current(); se != nil {
		return se.id
	}
	return 0
}
