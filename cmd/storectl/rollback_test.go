package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/internal/testing/pgtest"
)

// The error an instance of the previous version gets on upgraded tables,
// as docs/operations.md quotes it.
const newerSchema = "the tables have schema version 3, newer than this driver's 2: upgrade the driver"

// rollback is one engine's upgrade from one schema version to the next
// and rollback to the backup taken before it.
type rollback struct {
	spec           storeSpec
	op             *operator // storectl on its PATH is the old version's
	backupDoc      string    // the driver page whose backup procedure is taken
	backup, revert string    // the procedures' names
	ops            string
	// old and new are the two versions' instance programs ("": this test
	// binary); refused is the error the old one gets on upgraded tables.
	old, new, refused string
	// skip, if set, is the start of a line of the rollback not followed
	// (an operator's mistake): followRollback then returns what was
	// handed out without judging it.
	skip string
}

// followRollback: instances of the old version hand out values and terms
// (and lock fences), the backup is taken as the driver page says with the
// old version's tools, the new version's instances upgrade the tables and
// hand out more, the old version's instances are refused as the doc
// quotes, then docs/operations.md's rollback is followed with the old
// version's storectl, and the old version's instances hand out again:
// nothing twice.
func followRollback(t *testing.T, c rollback) *handedOutLog {
	h := newHandedOut()
	old := func(e string) {
		t.Helper()
		h.program = c.old
		if got := h.instanceOf(t, c.spec, c.ops); got != e && !strings.Contains(got, e) {
			t.Fatalf("an instance of the old version: %q, want %q", got, e)
		}
	}
	old("")
	c.op.follow(procedure(t, c.backupDoc, c.backup), nil)
	old("")
	// The upgrade: the new version's instances.
	h.program = c.new
	for range 2 {
		if e := h.instanceOf(t, c.spec, c.ops); e != "" {
			t.Fatal(e)
		}
	}
	old(c.refused)
	var lines []string
	for _, l := range procedure(t, "operations.md", c.revert) {
		if c.skip != "" && strings.HasPrefix(l, c.skip) {
			c.op.replace(l) // read, not run: its names are the doc's still
			continue
		}
		lines = append(lines, l)
	}
	res := c.op.follow(lines, stepper(t, map[string]func(){
		"stop every instance":                    func() {},
		"start the instances of the old version": func() {},
	}))
	for l, r := range res {
		if strings.HasPrefix(l, "storectl restore ") {
			r.want(t, exitOK, "key orders: raised from 30 to 1000030", "namespace workers: 2 slots raised")
		}
	}
	old("")
	old("")
	if c.skip != "" {
		return h
	}
	if v, f, o := h.duplicates(); v+f+o > 0 {
		t.Fatalf("after the documented rollback: %d values handed out twice (of %d), %d fences twice, %d overlapping terms",
			v, h.total(), f, o)
	}
	if n := h.total(); n != 180 {
		t.Fatalf("%d values handed out in all, want 180 (six instances' three ranges of 10)", n)
	}
	return h
}

// TestRollbackAsDocumented follows docs/operations.md's rollback across a
// schema change on SQLite and PostgreSQL, from the previous schema
// version's code (built from the repository's history) to the current
// and back.
func TestRollbackAsDocumented(t *testing.T) {
	prevCtl, prevInstance := previous(t)
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		dir, backups := t.TempDir(), t.TempDir()
		op := newOperator(t, "/var/lib/app/", dir+"/", "/backup/", backups+"/")
		op.tool("storectl", prevCtl)
		spec := storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(dir, "ids.db")}}
		followRollback(t, rollback{spec: spec, op: op, backupDoc: "drivers/sqlite.md", backup: "sqlite-backup",
			revert: "rollback-sqlite", ops: "next:orders:10:3,term:a,term:b", old: prevInstance, refused: newerSchema})
		// Why the old version's restore: the current one upgrades the
		// copy it raises, which the old instances then refuse.
		scratch := storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(dir, "scratch.db")}}
		exe(t, "restore", "--raise", "1000", "--no-moves", filepath.Join(backups, "ids-2026-12-01.db"), scratch.options["path"]).
			want(t, exitOK, "backup mark cleared")
		h := newHandedOut()
		h.program = prevInstance
		if e := h.instanceOf(t, scratch, "next:orders:10:1"); !strings.Contains(e, newerSchema) {
			t.Fatalf("an old instance on a backup the new storectl restored: %q, want %q", e, newerSchema)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url := pgDatabase(t, pgtest.Shared(t), "rollback")
		op := newOperator(t, "postgres://ids@db-1:5432/ids", url, "/backup/", t.TempDir()+"/")
		op.tool("storectl", prevCtl)
		op.pgTools()
		followRollback(t, rollback{spec: pgSpec(url), op: op, backupDoc: "drivers/postgres.md", backup: "postgres-backup",
			revert: "rollback-postgres", ops: restoreOps, old: prevInstance, refused: newerSchema})
	})
}

// pgSpec is the store on the database at url as the docs' procedures
// configure it: schema cosid, a pool of 4.
func pgSpec(url string) storeSpec {
	return storeSpec{driver: "postgres", options: map[string]string{"connString": url, "schema": "cosid", "poolSize": "4"}}
}

// pgDatabase creates a database of its own on srv and returns its URL.
func pgDatabase(t *testing.T, srv *pgtest.Server, prefix string) string {
	t.Helper()
	db := fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), seq.Add(1))
	conn, err := pgx.Connect(t.Context(), srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", srv.Addr(), db)
}
