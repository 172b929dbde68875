package main

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cosid-go/store/internal/testing/mysqltest"
)

// leafDB makes a leaf_alloc table as Leaf's scripts/leaf_alloc.sql does, in
// a database of its own, with three biz_tags; two have handed out
// segments, as Leaf's UPDATE max_id = max_id + step does. It returns the
// DSN of the database and its handle.
func leafDB(t *testing.T) (string, *sql.DB) {
	srv := mysqltest.Shared(t)
	name := srv.NewDatabase(t)
	db, err := sql.Open("mysql", srv.DSN(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{
		"CREATE TABLE `leaf_alloc` (\n" +
			"  `biz_tag` varchar(128)  NOT NULL DEFAULT '',\n" +
			"  `max_id` bigint(20) NOT NULL DEFAULT '1',\n" +
			"  `step` int(11) NOT NULL,\n" +
			"  `description` varchar(256)  DEFAULT NULL,\n" +
			"  `update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,\n" +
			"  PRIMARY KEY (`biz_tag`)\n" +
			") ENGINE=InnoDB",
		"INSERT INTO leaf_alloc(biz_tag, max_id, step, description) VALUES ('leaf-segment-test', 1, 2000, 'Test leaf Segment Mode Get Id')",
		"INSERT INTO leaf_alloc(biz_tag, max_id, step, description) VALUES ('orders', 1, 1000, 'orders')",
		"INSERT INTO leaf_alloc(biz_tag, max_id, step, description) VALUES ('users', 1, 500, 'users')",
		"UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = 'orders'",
		"UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = 'orders'",
		"UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = 'users'",
	} {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	return srv.DSN(name), db
}

// The operator procedure of docs (docs/drivers/mysql.md, Coming from Leaf), as written:
// without --leaf-stopped nothing happens; with it, each biz_tag starts at
// its max_id in the store, on every backend; a rerun changes nothing.
func TestImportLeaf(t *testing.T) {
	dsn, _ := leafDB(t)
	forEachBackend(t, func(t *testing.T, b backend) {
		spec := b.fresh(t)
		imp := func(extra ...string) result {
			return ctl(with(args("import-leaf", "--leaf", dsn), extra, spec.flags())...)
		}
		imp().want(t, exitRefused, "stop every Leaf server", "nothing was read or written")
		if b.name != "memory" { // a memory store lives in one process only
			if got := keysOf(t, spec.open(t)); len(got) != 0 {
				t.Fatalf("keys after a refused import: %v", got)
			}
		}
		r := imp("--leaf-stopped")
		r.want(t, exitOK, "orders: initialised at 2001 (Leaf max_id 2001, step 1000)",
			"users: initialised at 501", "leaf-segment-test: initialised at 1", "3 biz_tags read from leaf_alloc, 0 refused")
		if !strings.Contains(r.stderr, "every Leaf server must be stopped") {
			t.Errorf("import-leaf does not tell the operator to stop Leaf:\n%s", r.stderr)
		}
		imp("--leaf-stopped").want(t, exitOK, "orders: already at 2001, at or above max_id; nothing changed")
		if b.name == "memory" {
			return
		}
		st := spec.open(t)
		if got := next(t, st, "orders", 10); got.Start != 2001 {
			t.Errorf("first range of orders after the import: %v; want it to start at 2001", got)
		}
		if got := next(t, st, "users", 10); got.Start != 501 {
			t.Errorf("first range of users after the import: %v; want it to start at 501", got)
		}
	})
}

// A key the store has below max_id, or a biz_tag that is no valid key, is
// refused and named; the other biz_tags are imported.
func TestImportLeafRefusals(t *testing.T) {
	dsn, db := leafDB(t)
	if _, err := db.ExecContext(t.Context(), "INSERT INTO leaf_alloc(biz_tag, max_id, step) VALUES ('bad//tag', 5, 10)"); err != nil {
		t.Fatal(err)
	}
	spec := storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(t.TempDir(), "ids.db")}}
	ctl(with(args("init", "users", "7"), spec.flags())...).want(t, exitOK)
	r := ctl(with(args("import-leaf", "--leaf", dsn, "--leaf-stopped"), spec.flags())...)
	r.want(t, exitRefused, `"bad//tag"`, "not a valid key", `"users"`, "below max_id 501", "orders: initialised at 2001")
	ctl(with(args("import-leaf", "--leaf", dsn, "--leaf-stopped", "--tag", "nope"), spec.flags())...).
		want(t, exitFailed, `no biz_tag "nope"`, "nothing imported")
	ctl(with(args("import-leaf", "--leaf", "not a dsn", "--leaf-stopped"), spec.flags())...).want(t, exitUsage, "not a MySQL DSN")
	ctl(with(args("import-leaf", "--leaf", dsn, "--table", "x;y", "--leaf-stopped"), spec.flags())...).want(t, exitUsage, "--table")
}
