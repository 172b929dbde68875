package main

import (
	"testing"

	"github.com/cosid-go/store/internal/zktest"
)

// TestPurgeSparesNestedStore: a ZooKeeper store whose root lies inside
// another store's root (/ids and /ids/v2: a new store made next to the old
// one, then migrated into) is another store, with its own identity. Purging
// the outer store once everything moved out of it must not delete the inner
// one: its keys would start again at 0 and hand out every value again.
func TestPurgeSparesNestedStore(t *testing.T) {
	addr := servers.addr(t, zktest.Versions()[0])
	outer := zkSpec(t, addr, nil)
	inner := zkSpec(t, addr, map[string]string{"root": outer.options["root"] + "/v2"})
	exe(t, with(args("init"), outer.flags(), args("orders", "100"))...).want(t, exitOK, "orders: initialised at 100")
	exe(t, "migrate", "--from", outer.spec(), "--to", inner.spec()).want(t, exitOK,
		"key orders: sealed in source at 100; initialised in target at 100")
	app := inner.open(t)
	if r := next(t, app, "orders", 10); r.Start != 100 {
		t.Fatalf("the inner store's first range after the migration starts at %d, want 100", r.Start)
	}
	// Every key of the outer store is sealed: migrate's advice allows a purge.
	r := exe(t, with(args("purge", "--yes"), outer.flags())...)
	if cur, _, err := inner.open(t).Ranges().Current(t.Context(), "orders"); err != nil || cur != 110 {
		t.Fatalf("after storectl purge of the outer store (exit %d)\nstdout:\n%s\nstderr:\n%s\n"+
			"the inner store's orders: next %d (%v), want 110: its values would be handed out again",
			r.code, r.stdout, r.stderr, cur, err)
	}
	r.want(t, exitRefused, inner.options["root"], "nothing deleted")
}
