package main

import (
	"strings"
	"testing"

	"github.com/cosid-go/store/internal/testing/zktest"
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
	// Every key of the outer store is sealed (moved into the inner one):
	// purge refuses it for that already, before the nested root counts
	// (TestPurgeSparesNestedStoreDeeper has an outer store without seals).
	r := exe(t, with(args("purge", "--yes"), outer.flags())...)
	if cur, _, err := inner.open(t).Ranges().Current(t.Context(), "orders"); err != nil || cur != 110 {
		t.Fatalf("after storectl purge of the outer store (exit %d)\nstdout:\n%s\nstderr:\n%s\n"+
			"the inner store's orders: next %d (%v), want 110: its values would be handed out again",
			r.code, r.stdout, r.stderr, cur, err)
	}
	r.want(t, exitRefused, `range key "orders" (sealed at 100)`, "nothing deleted")
}

// purgeOverNested initialises orders at 100 in outer and at 7 in inner,
// a store nested in it, runs storectl purge of outer and wants inner's
// orders still at 7 (its values would be handed out again otherwise). It
// returns what purge did.
func purgeOverNested(t *testing.T, outer, inner storeSpec) result {
	t.Helper()
	ctl(with(args("init"), outer.flags(), args("orders", "100"))...).want(t, exitOK, "initialised at 100")
	ctl(with(args("init"), inner.flags(), args("orders", "7"))...).want(t, exitOK, "initialised at 7")
	r := ctl(with(args("purge", "--yes"), outer.flags())...)
	if cur, _, err := inner.open(t).Ranges().Current(t.Context(), "orders"); err != nil || cur != 7 {
		t.Fatalf("after the outer store's purge (exit %d)\nstdout:\n%s\nstderr:\n%s\nthe inner store's orders: next %d (%v), want 7",
			r.code, r.stdout, r.stderr, cur, err)
	}
	return r
}

// TestPurgeSparesNestedStoreDeeper: a store whose root lies deeper inside
// another's (in its owner index or lock trees, where the outer store reads
// nothing of it, or in its range or slot trees, where it reads corrupt data)
// is spared by the outer store's purge too, whose refusal names it.
func TestPurgeSparesNestedStoreDeeper(t *testing.T) {
	addr := servers.addr(t, zktest.Versions()[0])
	for _, tc := range []struct{ sub, say string }{
		{"/owner/v2", "/owner/v2/range"},
		{"/lock/v2", "/lock/v2/range"},
		{"/slot/v2", "corrupt data"},
		{"/range/a/b", "corrupt data"},
	} {
		t.Run(tc.sub, func(t *testing.T) {
			outer := zkSpec(t, addr, nil)
			inner := zkSpec(t, addr, map[string]string{"root": outer.options["root"] + tc.sub})
			r := purgeOverNested(t, outer, inner)
			if r.code == exitOK || !strings.Contains(r.stderr, tc.say) {
				t.Fatalf("purge of the outer store: exit %d, want a refusal naming %q\nstdout:\n%s\nstderr:\n%s", r.code, tc.say, r.stdout, r.stderr)
			}
		})
	}
}
