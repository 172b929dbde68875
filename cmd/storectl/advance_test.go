package main

import (
	"testing"
)

// TestAdvance: advance raises a key and says so, never lowers one, refuses
// a sealed key (exit 3, unchanged) and an unknown key without --create, on
// every backend.
func TestAdvance(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		spec := b.fresh(t)
		st := spec.open(t)
		rs := st.Ranges()
		if _, err := rs.Next(t.Context(), "orders", 30); err != nil {
			t.Fatal(err)
		}
		adv := func(a ...string) result { return ctl(with(args("advance"), spec.flags(), a)...) }
		current := func(key string, next int64, sealed bool) {
			t.Helper()
			n, s, err := rs.Current(t.Context(), key)
			if err != nil || n != next || s != sealed {
				t.Fatalf("%s is at %d (sealed %v, %v), want %d (sealed %v)", key, n, s, err, next, sealed)
			}
		}
		adv("orders", "100").want(t, exitOK, "orders: raised from 30 to 100")
		r, err := rs.Next(t.Context(), "orders", 10)
		if err != nil || r.Start != 100 {
			t.Fatalf("Next after advance: %v, %v; want [100,110)", r, err)
		}
		adv("orders", "50").want(t, exitOK, "orders: already at 110, at or above 50; nothing changed")
		current("orders", 110, false)

		adv("invoices", "70").want(t, exitFailed, `unknown key "invoices"`, "nothing changed", "--create")
		if keys := keysOf(t, st); len(keys) != 1 {
			t.Fatalf("a refused advance created a key: %q", keys)
		}
		adv("--create", "invoices", "70").want(t, exitOK, "invoices: created at 70")
		current("invoices", 70, false)

		if _, err := rs.Seal(t.Context(), "orders"); err != nil {
			t.Fatal(err)
		}
		adv("orders", "500").want(t, exitRefused, `key "orders" is sealed at 110`, "nothing changed")
		current("orders", 110, true)

		// A huge raise is final: refused (unchanged) unless --large.
		adv("invoices", "9223372036854775807").want(t, exitUsage, "raises by 9223372036854775737",
			"above the maximum 1000000000000", "--large", "nothing changed")
		current("invoices", 70, false)
		adv("invoices", "1000000000070").want(t, exitOK, "invoices: raised from 70 to 1000000000070")
		adv("--large", "invoices", "9223372036854775807").want(t, exitOK, "invoices: raised from 1000000000070 to 9223372036854775807")

		adv("orders", "-1").want(t, exitUsage, `VALUE "-1" is not a whole number`)
		adv("orders").want(t, exitUsage, "want KEY VALUE")
	})
}
