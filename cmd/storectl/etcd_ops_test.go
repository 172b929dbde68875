package main

import (
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/etcdtest"
)

// handedOut records every range and slot term the applications got, in
// every store, to check that no value and no (slot, timestamp) was handed
// out twice across the moves.
type handedOut struct {
	ranges map[string][]store.Range // key -> ranges, in every store
	terms  []store.Lease            // slot 0's terms, in every store
}

func (h *handedOut) next(t *testing.T, st *store.Store, key string, step int64) store.Range {
	t.Helper()
	r := next(t, st, key, step)
	h.ranges[key] = append(h.ranges[key], r)
	return r
}

// term takes slot 0 of workers and releases it at once.
func (h *handedOut) term(t *testing.T, st *store.Store, owner string) store.Lease {
	t.Helper()
	l := acquire(t, st, workers, owner, 0, time.Minute)
	if err := st.Slots().Release(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	h.terms = append(h.terms, l)
	return l
}

// check fails t if two ranges of a key overlap, or two terms of the slot
// share a timestamp or a fence.
func (h *handedOut) check(t *testing.T, after string) {
	t.Helper()
	for key, rs := range h.ranges {
		rs = slices.Clone(rs)
		slices.SortFunc(rs, func(a, b store.Range) int { return int(a.Start - b.Start) })
		for i := 1; i < len(rs); i++ {
			if rs[i].Start < rs[i-1].End {
				t.Fatalf("%s: key %s handed out %v and %v: values twice", after, key, rs[i-1], rs[i])
			}
		}
	}
	for i := 1; i < len(h.terms); i++ {
		a, b := h.terms[i-1], h.terms[i]
		if b.Fence <= a.Fence || b.Floor < a.Ceiling {
			t.Fatalf("%s: slot 0's term fence %d [%d, %d) followed by fence %d [%d, %d): a worker ID and millisecond twice",
				after, a.Fence, a.Floor, a.Ceiling, b.Fence, b.Floor, b.Ceiling)
		}
	}
}

// sealed fails t unless key is sealed in st at want.
func sealed(t *testing.T, st *store.Store, key string, want int64) {
	t.Helper()
	if _, err := st.Ranges().Next(t.Context(), key, 1); !errors.Is(err, store.ErrSealed) {
		t.Fatalf("Next of %s in the source after the move: %v, want ErrSealed", key, err)
	}
	if cur, s, err := st.Ranges().Current(t.Context(), key); err != nil || !s || cur != want {
		t.Fatalf("%s in the source after the move: next %d, sealed %v (%v); want sealed at %d", key, cur, s, err, want)
	}
}

// TestEtcdOperator: an operator's life with an etcd store, every step
// through the built binary: inspect, purge refused while a lease is live,
// migrate to SQLite and back into another etcd store, then into a store
// nested under that one's prefix on the same member, and a purge of the
// parent, which the store refuses: it would delete the nested store's
// keys with its own. Across the moves no value of a key and no slot
// timestamp is handed out twice, and each source ends sealed.
func TestEtcdOperator(t *testing.T) {
	t.Parallel()
	h := &handedOut{ranges: map[string][]store.Range{}}
	first := etcdSpec(t, nil)
	exe(t, with(args("inspect"), first.flags())...).want(t, exitFailed, "no store at ", first.options["prefix"])

	app := first.open(t)
	for range 3 {
		h.next(t, app, "orders", 100)
	}
	h.next(t, app, "users/eu", 7)
	h.term(t, app, "host-a")
	live := acquire(t, app, workers, "host-b", 1, time.Minute)

	r := exe(t, with(args("inspect"), first.flags())...)
	r.want(t, exitOK, "RANGES (2 keys)", "orders", "users/eu", "workers", "host-b")
	if m := idLine.FindStringSubmatch(r.stdout); m == nil || m[1] != created(t, first) {
		t.Fatalf("inspect shows identity %v, the library reads %s:\n%s", m, created(t, first), r.stdout)
	}
	exe(t, with(args("inspect", "--json"), first.flags())...).want(t, exitOK, `"orders"`)

	// A live lease: purge and migrate refuse, nothing changes.
	exe(t, with(args("purge", "--yes"), first.flags())...).want(t, exitRefused, "is in use", "workers/1", "nothing deleted")
	sqlite := storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(t.TempDir(), "ids.db")}}
	exe(t, "migrate", "--from", first.spec(), "--to", sqlite.spec()).want(t, exitRefused, "workers/1")
	h.next(t, app, "orders", 10) // the source still works
	if err := app.Slots().Release(t.Context(), live); err != nil {
		t.Fatal(err)
	}

	// etcd -> SQLite.
	exe(t, "migrate", "--from", first.spec(), "--to", sqlite.spec()).want(t, exitOK,
		"key orders: sealed in source at 310; initialised in target at 310",
		"key users/eu: sealed in source at 7; initialised in target at 7", "slot workers/0: seeded")
	sealed(t, app, "orders", 310)
	sealed(t, app, "users/eu", 7)
	file := sqlite.open(t)
	h.next(t, file, "orders", 50)
	h.next(t, file, "users/eu", 3)
	h.term(t, file, "host-a")
	h.check(t, "after etcd -> SQLite")
	file.Close()

	// SQLite -> another etcd store, on another prefix.
	second := etcdSpec(t, nil)
	exe(t, "migrate", "--from", sqlite.spec(), "--to", second.spec()).want(t, exitOK,
		"key orders: sealed in source at 360; initialised in target at 360",
		"key users/eu: sealed in source at 10; initialised in target at 10")
	sealed(t, sqlite.open(t), "orders", 360)
	st2 := second.open(t)
	h.next(t, st2, "orders", 40)
	h.term(t, st2, "host-a")
	h.check(t, "after SQLite -> etcd")

	// etcd -> etcd on the same member, under a prefix inside the source's.
	nested := etcdSpec(t, map[string]string{"prefix": second.options["prefix"] + "/v2"})
	exe(t, "migrate", "--from", second.spec(), "--to", nested.spec()).want(t, exitOK,
		"key orders: sealed in source at 400; initialised in target at 400",
		"key users/eu: sealed in source at 10; initialised in target at 10")
	sealed(t, st2, "orders", 400)
	if a, b := created(t, second), created(t, nested); a == b {
		t.Fatalf("the store under %s and the one inside it share identity %s", second.options["prefix"], a)
	}
	st3 := nested.open(t)
	h.next(t, st3, "orders", 25)
	h.term(t, st3, "host-a")
	h.check(t, "after etcd -> etcd")
	exe(t, with(args("inspect"), second.flags())...).want(t, exitOK, "RANGES (2 keys)", "400   yes")

	// Every key of the parent is sealed (moved into the nested store):
	// purge refuses it, which also spares the nested store's keys
	// (TestEtcdPurgeSparesNestedStore has a parent without seals, which
	// the store itself refuses for the nested metadata key).
	r = exe(t, with(args("purge", "--yes"), second.flags())...)
	if cur, _, err := st3.Ranges().Current(t.Context(), "orders"); err != nil || cur != 425 {
		t.Fatalf("after the purge of the parent (exit %d)\nstdout:\n%s\nstderr:\n%s\nthe nested store's orders: next %d (%v), want 425",
			r.code, r.stdout, r.stderr, cur, err)
	}
	r.want(t, exitRefused, "purge refused (nothing deleted)", `range key "orders" (sealed at 400)`, "use a new store")
	if strings.Contains(r.stderr, "part-way") {
		t.Fatalf("a refusal reported as a purge stopped part-way:\n%s", r.stderr)
	}
	sealed(t, st2, "orders", 400)
	h.next(t, st3, "orders", 5)
	h.check(t, "after the refused purge")

	// The nested store holds no seal, but its slots' next floors (terms
	// released without their last used timestamps, a term carried from
	// the source at its ceiling) are a minute ahead: its purge waits for
	// them (TestPurgeFloorAhead follows that advice).
	st3.Close()
	exe(t, with(args("purge", "--yes"), nested.flags())...).want(t, exitRefused, "nothing deleted",
		"slot workers/0 (last owner host-a", "Run purge again once the clock has passed them")
}

// TestEtcdPurgeSparesNestedStore: a store whose prefix lies inside another
// store's is spared by the outer store's purge, which names it: beside the
// outer store's trees the store refuses (another store's metadata key
// under its prefix). Inside the trees the outer store reads as its own
// entries (ranges, namespaces, slots, owners, locks: the inner store's key
// k would be the outer's range key range/k) the inner store is refused at
// its creation, writing nothing. And an inner store's instance holding a
// lock (its key on a live session's etcd lease) stops the purge too.
func TestEtcdPurgeSparesNestedStore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sub  string
		code int
		say  string
	}{
		{"/v2", exitRefused, "/v2/meta is the metadata of another store"},
	} {
		t.Run(tc.sub, func(t *testing.T) {
			outer := etcdSpec(t, nil)
			inner := etcdSpec(t, map[string]string{"prefix": outer.options["prefix"] + tc.sub})
			r := purgeOverNested(t, outer, inner)
			if cur, _, err := outer.open(t).Ranges().Current(t.Context(), "orders"); err != nil || cur != 100 {
				t.Fatalf("the outer store's orders after its refused purge: next %d (%v), want 100", cur, err)
			}
			r.want(t, tc.code, tc.say)
		})
	}
	for _, sub := range []string{"/range/v2", "/ns/v2", "/slot/v2", "/owner/v2", "/lock/v2"} {
		t.Run(sub, func(t *testing.T) {
			outer := etcdSpec(t, nil)
			inner := etcdSpec(t, map[string]string{"prefix": outer.options["prefix"] + sub})
			ctl(with(args("init"), outer.flags(), args("orders", "100"))...).want(t, exitOK, "initialised at 100")
			ctl(with(args("init"), inner.flags(), args("orders", "7"))...).want(t, exitFailed,
				"cannot open etcd", "lies among the keys of the store whose metadata key is "+outer.options["prefix"]+"/meta")
			if n := etcdKeys(t, inner.options["endpoints"], inner.options["prefix"]); n != 0 {
				t.Fatalf("the refused inner store wrote %d keys under %s", n, inner.options["prefix"])
			}
			ctl(with(args("purge", "--yes"), outer.flags())...).want(t, exitOK, "deleted range orders")
		})
	}
	t.Run("lock held", func(t *testing.T) {
		outer := etcdSpec(t, nil)
		inner := etcdSpec(t, map[string]string{"prefix": outer.options["prefix"] + "/v2"})
		ctl(with(args("init"), outer.flags(), args("orders", "100"))...).want(t, exitOK, "initialised at 100")
		l, err := inner.open(t).Locks().Lock(t.Context(), "jobs")
		if err != nil {
			t.Fatal(err)
		}
		ctl(with(args("purge", "--yes"), outer.flags())...).want(t, exitRefused,
			"the store refused the purge (nothing deleted)", inner.options["prefix"]+"/lock/jobs", "stop every instance first")
		select {
		case <-l.Lost():
			t.Fatal("the inner store's lock was lost to the outer store's purge")
		default:
		}
	})
}

// TestEtcdUnreachable: storectl against an etcd endpoint where nobody
// listens fails (exit code 1) within the bound the options or --timeout
// set, the driver's default included, with an error naming the store (its
// password hidden) and the endpoint; a migration into it changes nothing.
func TestEtcdUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nobody listens on addr now
	within := func(bound time.Duration, a ...string) result {
		t.Helper()
		start := time.Now()
		r := noSecret(t, exe(t, a...))
		if d := time.Since(start); d > bound {
			t.Errorf("storectl %s took %v against an unreachable etcd, want at most %v", a[0], d, bound)
		}
		if r.stdout != "" || strings.Contains(r.stderr, "storectl help") {
			t.Errorf("a failure, not bad usage, is reported on stderr only:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		}
		return r
	}
	// Bounds generous against the waits asked: a loaded machine.
	down := storeSpec{driver: "etcd", options: map[string]string{"endpoints": addr, "dialTimeout": "1s"}}
	within(15*time.Second, with(args("inspect"), down.flags())...).want(t, exitFailed,
		"storectl inspect: cannot open etcd dialTimeout=1s endpoints="+addr, "no connection to etcd at "+addr,
		"within dialTimeout 1s")
	// The driver's default dialTimeout (5s) bounds it without options.
	bare := storeSpec{driver: "etcd", options: map[string]string{"endpoints": addr}}
	within(30*time.Second, with(args("seal"), bare.flags(), args("orders"))...).want(t, exitFailed,
		"cannot open etcd endpoints="+addr, "within dialTimeout 5s")
	// --timeout, shorter than dialTimeout, ends it sooner.
	slow := storeSpec{driver: "etcd", options: map[string]string{"endpoints": addr, "dialTimeout": "1m"}}
	within(15*time.Second, with(args("inspect", "--timeout", "1s"), slow.flags())...).want(t, exitFailed,
		"cannot open etcd dialTimeout=1m endpoints="+addr, "no connection to etcd at "+addr, "before the context ended",
		"deadline exceeded")
	// With credentials: the store named with its password hidden.
	secret := storeSpec{driver: "etcd", options: map[string]string{"endpoints": addr, "dialTimeout": "1s",
		"username": "ops", "password": secretWord + "6"}}
	within(15*time.Second, with(args("purge", "--yes"), secret.flags())...).want(t, exitFailed,
		"cannot open etcd dialTimeout=1s endpoints="+addr+" password=*** username=ops", addr)

	// A migration into it: the source stays as it was.
	src := storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(t.TempDir(), "src.db")}}
	next(t, src.open(t), "orders", 10)
	within(15*time.Second, "migrate", "--from", src.spec(), "--to", secret.spec()).want(t, exitFailed,
		"cannot open etcd dialTimeout=1s endpoints="+addr+" password=*** username=ops")
	if cur, sealed, err := src.open(t).Ranges().Current(t.Context(), "orders"); err != nil || sealed || cur != 10 {
		t.Fatalf("the source after a migration to an unreachable etcd: next %d, sealed %v (%v); want 10, open", cur, sealed, err)
	}
}

// TestEtcdMemberFails: a store whose only member stops answering (paused:
// its connections stay open; then killed) makes each command fail within
// the bound (--timeout, dialTimeout), naming the store; once the member is
// back, the same commands work on the store as it was.
func TestEtcdMemberFails(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	m := c.Members[0]
	s := etcdSpec(t, map[string]string{"endpoints": m.ClientURL, "dialTimeout": "2s"})
	exe(t, with(args("init"), s.flags(), args("orders", "100"))...).want(t, exitOK, "initialised at 100")
	name := "etcd dialTimeout=2s endpoints=" + m.ClientURL + " prefix=" + s.options["prefix"]
	failsWithin := func(bound time.Duration, a ...string) {
		t.Helper()
		start := time.Now()
		exe(t, a...).want(t, exitFailed, "cannot open "+name, "no connection to etcd at "+m.ClientURL)
		if d := time.Since(start); d > bound {
			t.Errorf("storectl %s took %v with the member down, want at most %v", a[0], d, bound)
		}
	}
	m.Pause()
	failsWithin(20*time.Second, with(args("inspect"), s.flags())...)
	failsWithin(20*time.Second, with(args("seal", "--timeout", "1s"), s.flags(), args("orders"))...)
	m.Resume()
	exe(t, with(args("inspect"), s.flags())...).want(t, exitOK, "RANGES (1 key)")
	m.Stop() // killed
	failsWithin(20*time.Second, with(args("inspect"), s.flags())...)
	c.Restart(t, m)
	exe(t, with(args("seal"), s.flags(), args("orders"))...).want(t, exitOK, "orders: sealed at 100")
}
