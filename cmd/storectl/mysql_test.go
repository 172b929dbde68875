package main

import (
	"strings"
	"testing"

	"github.com/cosid-go/store/internal/testing/mysqltest"
)

// Every command test also runs on a real MariaDB server (a database of its
// own per store), and forEachPair migrates between MySQL and every other
// backend in both directions, locks included.
func init() {
	backends = append(backends, backend{name: "mysql", fresh: func(t *testing.T) storeSpec {
		srv := mysqltest.Shared(t)
		return storeSpec{driver: "mysql", options: map[string]string{
			"dsn":      srv.DSN(""),
			"database": srv.NewDatabase(t),
			"poolSize": "4",
		}}
	}})
}

// purge on MySQL: the keys go, and a store opened afterwards starts them
// at 0.
func TestMySQLPurge(t *testing.T) {
	var b backend
	for _, x := range backends {
		if x.name == "mysql" {
			b = x
		}
	}
	spec := b.fresh(t)
	next(t, spec.open(t), "orders", 100)
	ctl(with(args("purge", "--yes"), spec.flags())...).want(t, exitOK, "range orders")
	if r := next(t, spec.open(t), "orders", 1); r.Start != 0 {
		t.Fatalf("first range after the purge %v, want it to start at 0", r)
	}
}

// A MySQL DSN's password is never printed by storectl: not when the
// server refuses it, not in migrate's plan of a store it cannot open.
func TestMySQLPasswordNeverPrinted(t *testing.T) {
	const secret = "Hunter2-mysql"
	srv := mysqltest.Shared(t)
	dsn := "root:" + secret + "@tcp(" + srv.Addr() + ")/"
	spec := storeSpec{driver: "mysql", options: map[string]string{"dsn": dsn, "connectTimeout": "2s"}}
	for _, r := range []result{
		ctl(with(args("inspect"), spec.flags())...),
		migrate(spec, freshMemory(t)),
		ctl(with(args("import-leaf", "--leaf", dsn+"leaf", "--leaf-stopped"), spec.flags())...),
	} {
		if r.code == exitOK {
			t.Errorf("a command with a wrong password succeeded:\n%s", r.stdout)
		}
		if strings.Contains(r.stdout+r.stderr, secret) {
			t.Errorf("the password is printed:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		}
	}
}
