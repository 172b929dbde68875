package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store"
)

func TestPurge(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		needLocks(t, b)
		ctx := t.Context()
		spec := b.fresh(t)
		st := spec.open(t, store.WithOwner("ops"))
		next(t, st, "orders", 100)
		live := acquire(t, st, workers, "host-a", 0, time.Minute)
		expired := acquire(t, st, workers, "host-b", 1, 50*time.Millisecond)
		lock, err := st.Locks().Lock(ctx, "rebalance")
		if err != nil {
			t.Fatal(err)
		}
		waitPast(expired.Ceiling)
		purge := func(a ...string) result { return ctl(with(args("purge"), spec.flags(), a)...) }
		intact := func() {
			t.Helper()
			if keys := keysOf(t, st); len(keys) != 1 {
				t.Fatalf("a refused purge deleted keys: %v", keys)
			}
		}

		// A live lease and a held lock: refused, with or without --yes.
		// The expired lease does not count.
		r := purge("--yes")
		r.want(t, exitRefused, "is in use; stop every instance first (nothing deleted)",
			"lease workers/0 of host-a", "lock rebalance held by ops")
		for _, s := range []string{"workers/1", "host-b"} {
			if strings.Contains(r.stderr, s) {
				t.Errorf("the expired lease was reported in use:\n%s", r.stderr)
			}
		}
		intact()
		// With its last used timestamp: a next floor ahead would stop the
		// purge too (TestPurgeFloorAhead).
		if err := st.Slots().ReleaseUsed(ctx, live, live.Floor); err != nil {
			t.Fatal(err)
		}
		purge("--yes").want(t, exitRefused, "lock rebalance held by ops (fence ")
		intact()
		if err := lock.Unlock(ctx); err != nil {
			t.Fatal(err)
		}

		// Without --yes it says what it would delete. A lock name unused
		// since the Unlock may already have vanished on its own (ZooKeeper
		// deletes empty container nodes), so it counts one lock or none.
		r = purge()
		r.want(t, exitRefused, "1 range key, 1 namespace with 2 used slots, ", "run again with --yes")
		if !regexp.MustCompile(`2 used slots, (1 lock|0 locks); `).MatchString(r.stderr) {
			t.Errorf("purge's plan does not count the lock name as one or none:\n%s", r.stderr)
		}
		intact()

		r = purge("--yes")
		r.want(t, exitOK, "purged ")
		// Each driver names what it deleted its own way: "range orders" in
		// memory, the node path ".../range/orders" in ZooKeeper.
		if !regexp.MustCompile(`(?m)^deleted .*range[ /]orders$`).MatchString(r.stdout) {
			t.Errorf("purge did not report deleting the range key orders:\n%s", r.stdout)
		}
		after := ctl(with(args("inspect"), spec.flags())...)
		after.want(t, exitOK, "RANGES: none", "SLOTS: no namespaces", "LOCKS: none")
		// Purging an empty store is fine.
		purge("--yes").want(t, exitOK, ": 0 items\n")
	})
}

// TestPurgeFloorAhead: a term released without its last used timestamp
// starts the next at its ceiling; purge refuses while that floor is ahead
// (exit code 3, naming the slot and the floor, nothing deleted), and,
// following its advice, goes through once the clock has passed it.
func TestPurgeFloorAhead(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		spec := b.fresh(t)
		st := spec.open(t)
		next(t, st, "orders", 100)
		quick := store.Namespace{Name: "quick", Limit: 2, Tolerance: 10 * time.Millisecond}
		l := acquire(t, st, quick, "host-a", 0, 2*time.Second)
		if err := st.Slots().Release(t.Context(), l); err != nil {
			t.Fatal(err)
		}
		ctl(with(args("purge", "--yes"), spec.flags())...).want(t, exitRefused, "nothing deleted",
			"slot quick/0 (last owner host-a, fence 1): next floor ", "Run purge again once the clock has passed them")
		if keys := keysOf(t, st); len(keys) != 1 {
			t.Fatalf("a refused purge deleted keys: %v", keys)
		}
		waitPast(l.Ceiling)
		ctl(with(args("purge", "--yes"), spec.flags())...).want(t, exitOK, "purged ")
	})
}

// TestPurgeRefusedByStore: storectl's survey judges leases by this
// machine's clock, before the purge; the store judges them again by its own
// clock, with the deletion. A lease the survey takes for over (a clock an
// hour ahead here) but the store still counts live is refused by the store:
// exit code 3, a message naming the slot, nothing deleted.
func TestPurgeRefusedByStore(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		spec := b.fresh(t)
		st := spec.open(t, store.WithOwner("ops"))
		next(t, st, "orders", 100)
		live := acquire(t, st, workers, "host-a", 0, time.Minute)
		var out, errb bytes.Buffer
		ahead := &env{stdout: &out, stderr: &errb, now: func() time.Time { return time.Now().Add(time.Hour) }}
		err := runPurge(t.Context(), ahead, with(spec.flags(), args("--yes")))
		if exitCode(err) != exitRefused {
			t.Fatalf("purge with a lease live on the store's clock: exit code %d (%v), want %d\nstdout:\n%s",
				exitCode(err), err, exitRefused, out.String())
		}
		for _, s := range []string{"the store refused the purge (nothing deleted)", "workers/0", "stop every instance first"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("the refusal lacks %q:\n%v", s, err)
			}
		}
		if keys := keysOf(t, st); len(keys) != 1 {
			t.Fatalf("a refused purge deleted keys: %v", keys)
		}
		if _, err := st.Slots().Renew(t.Context(), live); err != nil {
			t.Fatalf("Renew after the refused purge: %v", err)
		}
	})
}
