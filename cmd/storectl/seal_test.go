package main

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cosid-go/store"
)

func TestSeal(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		spec := b.fresh(t)
		st := spec.open(t)
		for _, k := range []string{"orders", "users/eu"} {
			if _, err := st.Ranges().Next(ctx, k, 100); err != nil {
				t.Fatal(err)
			}
		}
		seal := func(a ...string) result { return ctl(with(args("seal"), spec.flags(), a)...) }

		// A typo among the keys seals none of them.
		seal("orders", "ordres").want(t, exitFailed, `unknown key "ordres"`, "nothing sealed", "--create")
		if _, sealed, err := st.Ranges().Current(ctx, "orders"); err != nil || sealed {
			t.Fatalf("orders after a refused seal: sealed %v, %v", sealed, err)
		}
		if keys := keysOf(t, st); slices.Contains(keys, "ordres") {
			t.Fatalf("a refused seal created the key: %v", keys)
		}

		// A malformed key is named once, with what is wrong with it.
		r := seal("orders", "a//b")
		r.want(t, exitUsage)
		if want := "storectl seal: key \"a//b\" must not contain \"//\" (an empty segment); nothing sealed\n"; !strings.HasPrefix(r.stderr, want) {
			t.Errorf("stderr = %q, want it to start with %q", r.stderr, want)
		}

		seal("orders", "users/eu").want(t, exitOK, "orders: sealed at 100\n", "users/eu: sealed at 100\n")
		if _, err := st.Ranges().Next(ctx, "orders", 1); !errors.Is(err, store.ErrSealed) {
			t.Fatalf("Next after seal: %v, want ErrSealed", err)
		}
		seal("orders").want(t, exitOK, "orders: already sealed at 100\n")
		// Flags may follow the keys.
		seal("new", "--create").want(t, exitOK, "new: created sealed at 0\n")
		if next, sealed, err := st.Ranges().Current(ctx, "new"); err != nil || next != 0 || !sealed {
			t.Fatalf("new: %d sealed %v, %v", next, sealed, err)
		}
	})
}

func TestInit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		spec := b.fresh(t)
		st := spec.open(t)
		initKey := func(a ...string) result { return ctl(with(args("init"), spec.flags(), a)...) }

		bad := initKey("/orders", "1200")
		bad.want(t, exitUsage)
		if want := "storectl init: key \"/orders\" must not start with '/'\n"; !strings.HasPrefix(bad.stderr, want) {
			t.Errorf("stderr = %q, want it to start with %q", bad.stderr, want)
		}
		initKey("orders", "1200").want(t, exitOK, "orders: initialised at 1200\n")
		initKey("orders", "1200").want(t, exitOK, "orders: already at 1200; nothing changed\n")
		initKey("orders", "900").want(t, exitFailed, `key "orders" exists at next value 1200, not 900; nothing changed`)
		r, err := st.Ranges().Next(ctx, "orders", 10)
		if err != nil || r.Start != 1200 {
			t.Fatalf("Next after init: %v, %v; want start 1200", r, err)
		}
		if _, err := st.Ranges().Seal(ctx, "orders"); err != nil {
			t.Fatal(err)
		}
		initKey("orders", "1210").want(t, exitOK, "orders: already at 1210 (sealed); nothing changed\n")
		initKey("orders", "5").want(t, exitFailed, "exists at next value 1210 (sealed), not 5")
	})
}
