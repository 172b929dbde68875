package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The partial restores of SQLite and MySQL: slot 0 is taken, the backup
// is made as the driver page says, slot 1 is first taken after it; then
// every table of the backup but cosid_slot_used goes back (and, on SQLite,
// cosid_meta, whose copy is marked as a backup), as an operator restoring
// by hand might. Then docs/operations.md's recovery, as written, but for
// the line that starts with skip (if set).

// partialSQLite: the tables copied back from the storectl backup copy with
// the sqlite3 shell.
func partialSQLite(t *testing.T, skip string) *handedOutLog {
	dir, backups := t.TempDir(), t.TempDir()
	op := newOperator(t, "/var/lib/app/", dir+"/", "/backup/", backups+"/")
	sqlite3, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Fatalf("%v (make sqlite3 installs the sqlite3 shell)", err)
	}
	op.tool("sqlite3", sqlite3)
	path := filepath.Join(dir, "ids.db")
	spec := storeSpec{driver: "sqlite", options: map[string]string{"path": path}}
	h := newHandedOut()
	if e := h.instanceOf(t, spec, "next:orders:10:3"); e != "" {
		t.Fatal(e)
	}
	slotZero(t, h, spec)
	op.follow(procedure(t, "drivers/sqlite.md", "sqlite-backup"), nil)
	bothSlots(t, h, spec)
	if e := h.instanceOf(t, spec, "next:orders:10:1"); e != "" { // values the backup has not
		t.Fatal(e)
	}
	var copyBack strings.Builder
	copyBack.WriteString("ATTACH '" + filepath.Join(backups, "ids-2026-12-01.db") + "' AS b; BEGIN;")
	for _, table := range []string{"cosid_namespace", "cosid_owner", "cosid_range", "cosid_slot"} {
		copyBack.WriteString(" DELETE FROM main." + table + "; INSERT INTO main." + table + " SELECT * FROM b." + table + ";")
	}
	copyBack.WriteString(" COMMIT;")
	op.run("sqlite3 "+path+" \""+copyBack.String()+"\"").want(t, exitOK)
	return followPartialRestore(t, h, spec, op, "partial-restore-sqlite",
		"slot workers/1 was used before and its row is gone (deleted by hand, or a partial restore)", skip)
}

// partialMySQL: the mysqldump file loaded with the mysql client, less its
// part for cosid_slot_used.
func partialMySQL(t *testing.T, skip string) *handedOutLog {
	op, spec := mysqlOperator(t, false)
	h := newHandedOut()
	if e := h.instanceOf(t, spec, "next:orders:10:3"); e != "" {
		t.Fatal(e)
	}
	slotZero(t, h, spec)
	res := op.follow(procedure(t, "drivers/mysql.md", "mysql-backup"), nil)
	bothSlots(t, h, spec)
	if e := h.instanceOf(t, spec, "next:orders:10:1"); e != "" { // values the backup has not
		t.Fatal(e)
	}
	var dump string
	for l := range res {
		_, f, ok := strings.Cut(op.replace(l), "--result-file=")
		if ok {
			dump = strings.Fields(f)[0]
		}
	}
	if dump == "" {
		t.Fatal("docs/drivers/mysql.md: the backup names no --result-file")
	}
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	const table = "--\n-- Table structure for table `"
	parts := strings.Split(string(b), table)
	kept := parts[:1]
	for _, p := range parts[1:] {
		if !strings.HasPrefix(p, "cosid_slot_used`") {
			kept = append(kept, p)
		}
	}
	if len(kept) != len(parts)-1 {
		t.Fatalf("the dump has %d parts for cosid_slot_used, want 1:\n%s", len(parts)-len(kept), b)
	}
	partial := filepath.Join(t.TempDir(), "partial.sql")
	if err := os.WriteFile(partial, []byte(strings.Join(kept, table)), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := op.run("mysql --defaults-extra-file=" + op.replace("/etc/cosid/admin.cnf") + " --execute='source " + partial + "'"); r.code != 0 {
		t.Fatalf("loading the dump less cosid_slot_used: exit code %d\n%s", r.code, r.stderr)
	}
	return followPartialRestore(t, h, spec, op, "partial-restore-mysql",
		"slot workers/1 was used before and its row is gone (deleted by hand, or a partial restore)", skip)
}
