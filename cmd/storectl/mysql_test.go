package main

import (
	"testing"

	"github.com/cosid-go/store/internal/testing/mysqltest"
)

// Every command test also runs on a real MariaDB server (a database of its
// own per store), and forEachPair migrates between MySQL and every other
// backend in both directions. The driver has no locks yet: the tests of
// locks skip on it (needLocks).
func init() {
	backends = append(backends, backend{name: "mysql", fresh: func(t *testing.T) storeSpec {
		srv := mysqltest.Shared(t)
		return storeSpec{driver: "mysql", options: map[string]string{
			"dsn":      srv.DSN(""),
			"database": srv.NewDatabase(t),
			"poolSize": "4",
		}}
	}, noLocks: "the mysql driver has no locks yet (Locks: ErrUnsupported)"})
}

// purge on MySQL, whose TestPurge skips for want of locks: the keys go,
// and a store opened afterwards starts them at 0.
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
