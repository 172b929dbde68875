package main

import (
	"strings"
	"testing"
	"time"
)

// TestMigrateOneTargetPerKey: after `migrate --key orders` to B, a full
// migrate to C refuses orders (exit 3, nothing changed, naming the way on)
// and the documented way on, the rest named with --key and --namespace,
// moves the rest to C; C never gets orders.
func TestMigrateOneTargetPerKey(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		src, b, c := be.fresh(t), be.fresh(t), be.fresh(t)
		next(t, src.open(t), "orders", 10)
		next(t, src.open(t), "users", 7)
		l := acquire(t, src.open(t), workers, "host-a", 0, time.Minute)
		if err := src.open(t).Slots().ReleaseUsed(t.Context(), l, l.Floor); err != nil {
			t.Fatal(err)
		}
		migrate(src, b, "--key", "orders").want(t, exitOK, "key orders: sealed in source at 10; initialised in target at 10")
		migrate(src, c).want(t, exitRefused, `key "orders": sealed in the source at 10 and missing in the target`,
			"nothing changed", "--key and --namespace naming the others", "--adopt-sealed")
		if k := keysOf(t, c.open(t)); len(k) != 0 {
			t.Fatalf("a refused migrate wrote keys into the target: %q", k)
		}
		migrate(src, c, "--key", "users", "--namespace", "workers").want(t, exitOK,
			"key users: sealed in source at 7; initialised in target at 7", "namespace workers: sealed in source")
		if k := keysOf(t, c.open(t)); strings.Join(k, ",") != "users" {
			t.Fatalf("keys of C: %q, want users only", k)
		}
		// A rerun into each target still finishes (nothing left to do).
		migrate(src, b, "--key", "orders").want(t, exitOK, "key orders: already sealed in source at 10; already in target at 10")
		migrate(src, c, "--key", "users", "--namespace", "workers").want(t, exitOK, "key users: already sealed in source at 7")
	})
}

// TestMigrateRerunAfterClaim: a migrate killed after it started a key in
// the target and before it sealed the source leaves the key at the
// source's value in both; the rerun finishes it without a warning (the
// key is the migrate's own, not one an instance created in the target).
func TestMigrateRerunAfterClaim(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		src, dst := be.fresh(t), be.fresh(t)
		next(t, src.open(t), "orders", 30)
		if err := dst.open(t).Ranges().Init(t.Context(), "orders", 30); err != nil {
			t.Fatal(err)
		}
		r := migrate(src, dst)
		r.want(t, exitOK, "key orders: sealed in source at 30; already in target at 30")
		if strings.Contains(r.stderr, "warning") {
			t.Fatalf("a rerun after a claim warned:\n%s", r.stderr)
		}
		if got := next(t, dst.open(t), "orders", 1); got.Start != 30 {
			t.Fatalf("the target hands out %v, want from 30", got)
		}
	})
}
