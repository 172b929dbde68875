package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cosid-go/store/internal/testing/mysqltest"
)

// mysqlOperator is an operator of a database of its own on the shared
// MariaDB server, with the mysql and mysqldump clients on its PATH and the
// docs' names (options file, DSN, database, backup directory) replaced by
// the test's, and the store's spec. drop: the procedures drop the
// database (DROP DATABASE cosid), else they name it to the mysql client
// (--database=cosid).
func mysqlOperator(t *testing.T, drop bool) (*operator, storeSpec) {
	t.Helper()
	srv := mysqltest.Shared(t)
	db := srv.NewDatabase(t)
	extra := []string{"--database=cosid", "--database=" + db}
	if drop {
		extra = []string{"DROP DATABASE cosid", "DROP DATABASE " + db}
	}
	host, port, _ := strings.Cut(srv.Addr(), ":")
	dir := t.TempDir()
	cnf := filepath.Join(dir, "admin.cnf")
	if err := os.WriteFile(cnf, []byte("[client]\nhost="+host+"\nport="+port+"\nuser=root\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dsn := "root@tcp(" + srv.Addr() + ")/"
	op := newOperator(t, append([]string{
		"/etc/cosid/admin.cnf", cnf,
		"ids:secret@tcp(db-1:3306)/", dsn,
		"--databases cosid", "--databases " + db,
		"-o database=cosid", "-o database=" + db,
		"/backup/", dir + "/"}, extra...)...)
	for _, tool := range []string{"mysqldump", "mysql"} {
		path, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%v (make mariadb installs the client tools)", err)
		}
		op.tool(tool, path)
	}
	return op, storeSpec{driver: "mysql", options: map[string]string{"dsn": dsn, "database": db, "poolSize": "4"}}
}

// TestRollbackMySQLAsDocumented follows docs/operations.md's rollback of
// MySQL across a schema change, after docs/drivers/mysql.md's backup, from
// the next version (nextBuild: no release has MySQL tables of another
// version) back to this one. SkipRestore is an operator who loads the dump
// and starts the old instances without the old storectl restore: they
// hand out again what the new version handed out.
func TestRollbackMySQLAsDocumented(t *testing.T) {
	nextInstance := nextBuild(t)
	asWrittenAndSkipped(t, "rollback", func(t *testing.T, skip string) *handedOutLog {
		op, spec := mysqlOperator(t, true)
		return followRollback(t, rollback{spec: spec, op: op, backupDoc: "drivers/mysql.md", backup: "mysql-backup",
			revert: "rollback-mysql", ops: restoreOps, new: nextInstance, refused: nextSchema, skip: skip})
	})
}
