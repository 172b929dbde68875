package main

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	_ "github.com/cosid-go/store/drivers/memory"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// forEachPair runs f as a parallel subtest for every source and target
// backend: with ZooKeeper added, that includes ZooKeeper to memory and back.
func forEachPair(t *testing.T, f func(t *testing.T, from, to backend)) {
	for _, a := range backends {
		for _, b := range backends {
			t.Run(a.name+"_to_"+b.name, func(t *testing.T) {
				t.Parallel()
				f(t, a, b)
			})
		}
	}
}

func migrate(from, to storeSpec, extra ...string) result {
	return ctl(with(args("migrate", "--from", from.spec(), "--to", to.spec()), extra)...)
}

var workers = store.Namespace{Name: "workers", Limit: 8, Tolerance: 50 * time.Millisecond}

// acquire leases slot n of ns for owner, failing the test if another slot
// comes back.
func acquire(t *testing.T, st *store.Store, ns store.Namespace, owner string, n int, ttl time.Duration) store.Lease {
	t.Helper()
	l, err := st.Slots().Acquire(t.Context(), ns, owner, store.AcquireOptions{TTL: ttl, Preferred: new(n)})
	if err != nil {
		t.Fatal(err)
	}
	if l.Slot != n {
		t.Fatalf("%s got slot %d, want %d", owner, l.Slot, n)
	}
	return l
}

func slotsOf(t *testing.T, st *store.Store, ns string) []store.SlotInfo {
	t.Helper()
	infos, err := st.Slots().List(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return infos
}

func next(t *testing.T, st *store.Store, key string, step int64) store.Range {
	t.Helper()
	r, err := st.Ranges().Next(t.Context(), key, step)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestMigrate(t *testing.T) {
	forEachPair(t, func(t *testing.T, from, to backend) {
		ctx := t.Context()
		src, dst := from.fresh(t), to.fresh(t)
		s, d := src.open(t), dst.open(t)

		// Values handed out in the source: orders [0, 300), users/eu [0, 7).
		for range 3 {
			next(t, s, "orders", 100)
		}
		next(t, s, "users/eu", 7)
		// Slot 0 released stating what it used, slot 1 released without,
		// slot 2 abandoned until it expired, slot 3 on its second term.
		l0 := acquire(t, s, workers, "host-a", 0, time.Minute)
		used := time.Now().UnixMilli()
		if err := s.Slots().ReleaseUsed(ctx, l0, used); err != nil {
			t.Fatal(err)
		}
		l1 := acquire(t, s, workers, "host-b", 1, time.Minute)
		if err := s.Slots().Release(ctx, l1); err != nil {
			t.Fatal(err)
		}
		l2 := acquire(t, s, workers, "host-c", 2, 100*time.Millisecond)
		for range 2 {
			l3 := acquire(t, s, workers, "host-d", 3, time.Minute)
			if err := s.Slots().Release(ctx, l3); err != nil {
				t.Fatal(err)
			}
		}
		waitPast(l2.Ceiling)
		srcSlots := slotsOf(t, s, "workers")
		// The least floor of each slot's next term: the next floor of a
		// released slot, the ceiling of one that expired.
		floors := map[int]int64{0: srcSlots[0].NextFloor, 1: srcSlots[1].NextFloor, 2: l2.Ceiling, 3: srcSlots[3].NextFloor}
		if floors[0] != used+1 || floors[1] < l1.Ceiling || srcSlots[3].Fence != 2 {
			t.Fatalf("unexpected source slots: %+v", srcSlots)
		}

		wantSeeded := []string{
			"key orders: sealed in source at 300; initialised in target at 300\n",
			"key users/eu: sealed in source at 7; initialised in target at 7\n",
			"namespace workers: sealed in source; limit 8, tolerance 50ms, 4 slots used\n",
			"done: 2 keys, 4 slots\n",
		}
		for _, in := range srcSlots {
			wantSeeded = append(wantSeeded, fmt.Sprintf("slot workers/%d: seeded fence %d, floor %d (%s); the next term gets fence %d",
				in.Slot, in.Fence, floors[in.Slot], utc(floors[in.Slot]), in.Fence+1))
		}
		migrate(src, dst).want(t, exitOK, wantSeeded...)
		if _, err := s.Ranges().Next(ctx, "orders", 1); !errors.Is(err, store.ErrSealed) {
			t.Fatalf("Next in the source after the move: %v, want ErrSealed", err)
		}

		// Run again at once: everything is reported done, nothing changes.
		before := slotsOf(t, d, "workers")
		migrate(src, dst).want(t, exitOK,
			"key orders: already sealed in source at 300; already in target at 300\n",
			"key users/eu: already sealed in source at 7; already in target at 7\n",
			"slot workers/0: already carried", "slot workers/3: already carried")
		if diff := cmp.Diff(before, slotsOf(t, d, "workers")); diff != "" {
			t.Fatalf("a rerun changed the target's slots (-before +after):\n%s", diff)
		}

		// The target continues above every value the source handed out...
		if r := next(t, d, "orders", 50); r.Start != 300 {
			t.Fatalf("first range in the target %v, want it to start at 300", r)
		}
		if r := next(t, d, "users/eu", 1); r.Start != 7 {
			t.Fatalf("first range in the target %v, want it to start at 7", r)
		}
		// ...and each slot's next term continues its fence and starts at or
		// above what the source's terms could have issued.
		for _, in := range srcSlots {
			l := acquire(t, d, workers, fmt.Sprintf("new-%d", in.Slot), in.Slot, time.Minute)
			if l.Fence != in.Fence+1 || l.Floor < floors[in.Slot] {
				t.Errorf("slot %d in the target: fence %d, floor %d; want fence %d and floor >= %d",
					in.Slot, l.Fence, l.Floor, in.Fence+1, floors[in.Slot])
			}
			if in.Owner != "" && l.Floor < in.Ceiling {
				t.Errorf("slot %d: floor %d below the expired term's ceiling %d", in.Slot, l.Floor, in.Ceiling)
			}
		}

		// Run again after the target was used: still done, and said so.
		before = slotsOf(t, d, "workers")
		migrate(src, dst).want(t, exitOK,
			"key orders: already sealed in source at 300; already in target, used since: at 350\n",
			"key users/eu: already sealed in source at 7; already in target, used since: at 8\n",
			"slot workers/2: already carried")
		if diff := cmp.Diff(before, slotsOf(t, d, "workers")); diff != "" {
			t.Fatalf("a rerun changed the target's slots (-before +after):\n%s", diff)
		}
	})
}

func TestMigrateRoundTrip(t *testing.T) {
	forEachPair(t, func(t *testing.T, from, to backend) {
		ctx := t.Context()
		a, b := from.fresh(t), to.fresh(t)
		sa, sb := a.open(t), b.open(t)
		next(t, sa, "orders", 100)
		next(t, sa, "orders", 100)
		la := acquire(t, sa, workers, "host-a", 0, time.Minute)
		if err := sa.Slots().Release(ctx, la); err != nil {
			t.Fatal(err)
		}
		migrate(a, b).want(t, exitOK, "initialised in target at 200")

		// Used in b.
		if r := next(t, sb, "orders", 100); r.Start != 200 {
			t.Fatalf("b starts at %d, want 200", r.Start)
		}
		lb := acquire(t, sb, workers, "host-a", 0, time.Minute)
		if lb.Fence != la.Fence+1 || lb.Floor < la.Ceiling {
			t.Fatalf("term in b: %+v; want fence %d and floor >= %d", lb, la.Fence+1, la.Ceiling)
		}
		if err := sb.Slots().Release(ctx, lb); err != nil {
			t.Fatal(err)
		}

		// Back into a: its key is sealed, which the portable API cannot
		// undo; nothing changes, b included. The advice: another target.
		migrate(b, a).want(t, exitFailed, "nothing changed", `key "orders": the target has it sealed at 200`,
			`namespace "workers": the target has it sealed`, "migrate to another target, a new store")
		if r := next(t, sb, "orders", 1); r.Start != 300 {
			t.Fatalf("b after the refused move: %v, want it unsealed at 300", r)
		}
		// The old advice, purging a, is refused: a forgets no seal.
		ctl(with(args("purge", "--yes"), a.flags())...).want(t, exitRefused, "nothing deleted",
			`range key "orders" (sealed at 200)`, `namespace "workers"`, "use a new store")

		// Following the advice: b moves on to a new store c.
		c := from.fresh(t)
		migrate(b, c).want(t, exitOK, "key orders: sealed in source at 301; initialised in target at 301",
			fmt.Sprintf("slot workers/0: seeded fence %d", lb.Fence))
		sc := c.open(t)
		if r := next(t, sc, "orders", 10); r.Start != 301 {
			t.Fatalf("c after the move starts at %d, want 301", r.Start)
		}
		l := acquire(t, sc, workers, "host-a", 0, time.Minute)
		bSlot := slotsOf(t, sb, "workers")[0]
		if l.Fence != lb.Fence+1 || l.Floor < bSlot.NextFloor || l.Floor < lb.Ceiling {
			t.Fatalf("term in c: %+v; want fence %d and floor >= %d (ceiling %d)", l, lb.Fence+1, bSlot.NextFloor, lb.Ceiling)
		}
		// An instance still pointed at a (or b) gets ErrSealed, never values
		// or a slot c hands out too.
		for name, st := range map[string]*store.Store{"a": a.open(t), "b": b.open(t)} {
			if r, err := st.Ranges().Next(ctx, "orders", 10); !errors.Is(err, store.ErrSealed) {
				t.Fatalf("an instance on %s got %v, %v; want ErrSealed", name, r, err)
			}
			if l, err := st.Slots().Acquire(ctx, workers, "host-z", store.AcquireOptions{TTL: time.Minute}); !errors.Is(err, store.ErrSealed) {
				t.Fatalf("an instance on %s acquired %+v, %v; want ErrSealed", name, l, err)
			}
		}
	})
}

func TestMigrateLiveLease(t *testing.T) {
	forEachPair(t, func(t *testing.T, from, to backend) {
		ctx := t.Context()
		src, dst := from.fresh(t), to.fresh(t)
		s, d := src.open(t), dst.open(t)
		next(t, s, "orders", 10)
		live := acquire(t, s, workers, "host-a", 0, time.Minute)

		migrate(src, dst).want(t, exitRefused, "nothing changed", "1 of the source's leases and locks may still be in use",
			"lease workers/0 of host-a", "--force")
		if _, sealed, err := s.Ranges().Current(ctx, "orders"); err != nil || sealed {
			t.Fatalf("a refused migration sealed the source: %v, %v", sealed, err)
		}
		if keys := keysOf(t, d); len(keys) != 0 {
			t.Fatalf("a refused migration wrote keys: %v", keys)
		}

		r := migrate(src, dst, "--force")
		r.want(t, exitOK, "warning: --force: carrying lease workers/0 of host-a", "namespace workers: sealed in source",
			"slot workers/0: seeded fence 1")
		// The holder, if it was alive after all, can no longer renew in the
		// source: it stops at the ceiling the target starts above.
		if _, err := s.Slots().Renew(ctx, live); !errors.Is(err, store.ErrSealed) {
			t.Fatalf("Renew in the source after the migration: %v, want ErrSealed", err)
		}
		l := acquire(t, d, workers, "host-b", 0, time.Minute)
		if l.Fence != 2 || l.Floor < live.Ceiling {
			t.Fatalf("term in the target: %+v; want fence 2 and floor >= %d", l, live.Ceiling)
		}
		if err := s.Slots().Release(ctx, live); err != nil {
			t.Fatalf("Release in the sealed source: %v", err)
		}
	})
}

// A lease past its expiry still counts until its ceiling: the holder's
// clock may be behind the store's by up to the tolerance.
func TestMigrateWithinTolerance(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		src, dst := b.fresh(t), b.fresh(t)
		// A minute past the expiry: far longer than the migration takes.
		ns := store.Namespace{Name: "slow", Limit: 2, Tolerance: time.Minute}
		l := acquire(t, src.open(t), ns, "host-a", 0, 50*time.Millisecond)
		waitPast(l.ExpiresAt)
		migrate(src, dst).want(t, exitRefused, "lease slow/0 of host-a", "ceiling")
	})
}

func TestMigrateSelected(t *testing.T) {
	forEachPair(t, func(t *testing.T, from, to backend) {
		ctx := t.Context()
		src, dst := from.fresh(t), to.fresh(t)
		s, d := src.open(t), dst.open(t)
		next(t, s, "orders", 10)
		next(t, s, "other", 10)
		others := store.Namespace{Name: "others", Limit: 2}
		for _, ns := range []store.Namespace{workers, others} {
			if err := s.Slots().Release(ctx, acquire(t, s, ns, "host-a", 0, time.Minute)); err != nil {
				t.Fatal(err)
			}
		}

		migrate(src, dst, "--key", "other", "--key", "nope").want(t, exitFailed, `key "nope": no such key in the source`)
		migrate(src, dst, "--namespace", "nope").want(t, exitFailed, `namespace "nope": no such namespace in the source`)
		if _, sealed, err := s.Ranges().Current(ctx, "other"); err != nil || sealed {
			t.Fatalf("a refused migration sealed a key: %v, %v", sealed, err)
		}

		r := migrate(src, dst, "--key", "orders", "--namespace", "workers")
		r.want(t, exitOK, "key orders: sealed", "slot workers/0: seeded", "done: 1 key, 1 slot")
		if keys := keysOf(t, d); !slices.Equal(keys, []string{"orders"}) {
			t.Fatalf("target keys %v, want [orders]", keys)
		}
		nss, err := d.Slots().Namespaces(ctx)
		if err != nil || len(nss) != 1 || nss[0] != workers {
			t.Fatalf("target namespaces %v, %v; want [workers]", nss, err)
		}
		if _, sealed, err := s.Ranges().Current(ctx, "other"); err != nil || sealed {
			t.Fatalf("a key not named was sealed: %v, %v", sealed, err)
		}
	})
}

func TestMigrateConflicts(t *testing.T) {
	forEachPair(t, func(t *testing.T, from, to backend) {
		ctx := t.Context()
		src := from.fresh(t)
		s := src.open(t)
		next(t, s, "orders", 100)
		if err := s.Slots().Release(ctx, acquire(t, s, workers, "host-a", 0, time.Minute)); err != nil {
			t.Fatal(err)
		}
		unchanged := func() {
			t.Helper()
			if _, sealed, err := s.Ranges().Current(ctx, "orders"); err != nil || sealed {
				t.Fatalf("a refused migration sealed the source: %v, %v", sealed, err)
			}
		}

		lower := to.fresh(t)
		if err := lower.open(t).Ranges().Init(ctx, "orders", 50); err != nil {
			t.Fatal(err)
		}
		migrate(src, lower).want(t, exitFailed, "nothing changed", `key "orders": the target has it at 50, below 100`)
		unchanged()

		settings := to.fresh(t)
		acquire(t, settings.open(t), store.Namespace{Name: "workers", Limit: 4}, "x", 1, time.Minute)
		migrate(src, settings).want(t, exitFailed, `namespace "workers": the target has limit 4 and tolerance 0s, the source limit 8 and tolerance 50ms`)
		unchanged()

		busy := to.fresh(t)
		acquire(t, busy.open(t), workers, "someone", 0, time.Minute)
		migrate(src, busy).want(t, exitFailed, "slot workers/0: the target has a live term of someone")
		unchanged()
	})
}

// Test drivers without slots, and with slots but no seeding.
func init() {
	store.Register("test-noseed", func(options map[string]string) (driver.Store, error) {
		st, err := store.Open("memory", options)
		if err != nil {
			return nil, err
		}
		m := rawdriver.Of(st)
		return noSeed{m.(driver.RangeStore), m.(driver.SlotLeaseStore), m.(driver.Locker), m}, nil
	})
}

type noSeed struct {
	driver.RangeStore
	driver.SlotLeaseStore
	driver.Locker
	closer driver.Store
}

func (n noSeed) Close() error { return n.closer.Close() }

func TestMigrateUnsupported(t *testing.T) {
	ctx := t.Context()
	mem := freshMemory(t)
	st := mem.open(t)
	if err := st.Slots().Release(ctx, acquire(t, st, workers, "h", 0, time.Minute)); err != nil {
		t.Fatal(err)
	}
	rangesOnly := storeSpec{driver: "test-rangesonly", options: freshMemory(t).options}
	next(t, rangesOnly.open(t), "k", 5)

	// From a driver without slots, keys move and slots are not asked for.
	migrate(rangesOnly, freshMemory(t)).want(t, exitOK, "key k: sealed in source at 5; initialised in target at 5", "done: 1 key, 0 slots")
	// Into one without slots, or without seeding, slots cannot go.
	migrate(mem, storeSpec{driver: "test-rangesonly", options: freshMemory(t).options}).want(t, exitFailed,
		"the target driver has no slot namespaces")
	migrate(mem, storeSpec{driver: "test-noseed", options: freshMemory(t).options}).want(t, exitFailed,
		"the target driver cannot seed slots")
}

func TestMigrateUsage(t *testing.T) {
	a, b := freshMemory(t), freshMemory(t)
	for _, tc := range []struct {
		name string
		args []string
		say  string
	}{
		{"no --from", args("migrate", "--to", b.spec()), "--from is required"},
		{"no --to", args("migrate", "--from", a.spec()), "--to is required"},
		{"not a spec", args("migrate", "--from", "prod", "--to", b.spec()), `--from "prod": want DRIVER:KEY=VALUE`},
		{"piece without =", args("migrate", "--from", "memory:name", "--to", b.spec()), "the first option has no '='"},
		{"stray argument", args("migrate", "--from", a.spec(), "--to", b.spec(), "orders"), `unexpected argument "orders" (name keys with --key)`},
		{"bad option", args("migrate", "--from", "memory:bogus=1", "--to", b.spec()), `unknown option "bogus"`},
		{"unknown driver", args("migrate", "--from", "mongo:", "--to", b.spec()), `unknown driver "mongo"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctl(tc.args...).want(t, exitUsage, tc.say)
		})
	}
	ctl("migrate", "--from", "test-unreachable:", "--to", b.spec()).want(t, exitFailed, "192.0.2.1:2181")
	a.open(t)
	ctl("migrate", "--from", a.spec(), "--to", a.spec()).want(t, exitRefused, "--from and --to are the same store")
}

func TestParseOptionList(t *testing.T) {
	got, err := parseOptionList("connectString=zk1:2181,zk2:2181,root=/cosid,sessionTimeout=10s")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"connectString": "zk1:2181,zk2:2181", "root": "/cosid", "sessionTimeout": "10s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatal(diff)
	}
	for _, bad := range []string{"x", "=v", "a=1,a=2"} {
		if _, err := parseOptionList(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestMigrateSealsSourceSlots: migrate seals each carried namespace in the
// source before it reads the slots, as it seals range keys. Before, an
// instance still running on the source acquired slot 0 there after the
// migration while one on the target acquired slot 0 too: one Snowflake
// worker ID in two stores, duplicate IDs. Now the source refuses every new
// term (ErrSealed), a rerun reports the seal as already done, and moving
// the namespace back into the sealed source is refused before anything
// changes.
func TestMigrateSealsSourceSlots(t *testing.T) {
	forEachPair(t, func(t *testing.T, from, to backend) {
		ctx := t.Context()
		src, dst := from.fresh(t), to.fresh(t)
		s := src.open(t)
		l := acquire(t, s, workers, "host-a", 0, time.Minute)
		if err := s.Slots().Release(ctx, l); err != nil {
			t.Fatal(err)
		}
		next(t, s, "orders", 100)
		migrate(src, dst).want(t, exitOK, "namespace workers: sealed in source", "slot workers/0: seeded fence 1")
		for _, owner := range []string{"host-a", "host-c"} {
			if a, err := src.open(t).Slots().Acquire(ctx, workers, owner, store.AcquireOptions{TTL: time.Minute}); !errors.Is(err, store.ErrSealed) {
				t.Fatalf("Acquire by %s in the source after the migration: %+v, %v; want ErrSealed", owner, a, err)
			}
		}
		b := acquire(t, dst.open(t), workers, "host-b", 0, time.Minute)
		if b.Fence != 2 || b.Floor < l.Ceiling {
			t.Fatalf("term in the target: %+v; want fence 2 and floor >= %d", b, l.Ceiling)
		}
		nss, err := src.open(t).Slots().Namespaces(ctx)
		if err != nil || len(nss) != 1 || !nss[0].Sealed {
			t.Fatalf("source namespaces after the migration: %+v, %v; want workers sealed", nss, err)
		}
		ctl(with(args("inspect"), src.flags())...).want(t, exitOK, "namespace workers: limit 8, tolerance 50ms, sealed, 1 slot used")
		migrate(src, dst).want(t, exitOK, "namespace workers: already sealed in source", "slot workers/0: already carried")
		migrate(dst, src, "--namespace", "workers").want(t, exitFailed, "nothing changed",
			`namespace "workers": the target has it sealed`)
	})
}
