package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cosid-go/store"
)

// jsonReport is the documented --json schema, written out again so that a
// renamed field fails the test.
type jsonReport struct {
	Schema int     `json:"schema"`
	ID     *string `json:"id"`
	Now    int64   `json:"now"`
	NowUTC string  `json:"nowUTC"`
	Keys   []struct {
		Key    string `json:"key"`
		Next   int64  `json:"next"`
		Sealed bool   `json:"sealed"`
	} `json:"keys"`
	Namespaces []struct {
		Name        string     `json:"name"`
		Limit       int        `json:"limit"`
		ToleranceMs int64      `json:"toleranceMs"`
		Sealed      bool       `json:"sealed"`
		Slots       []jsonSlot `json:"slots"`
	} `json:"namespaces"`
	Locks []struct {
		Name    string       `json:"name"`
		Holder  *jsonWaiter  `json:"holder"`
		Waiters []jsonWaiter `json:"waiters"`
	} `json:"locks"`
	Unsupported []string `json:"unsupported"`
}

type jsonSlot struct {
	Slot         int    `json:"slot"`
	State        string `json:"state"`
	Owner        string `json:"owner"`
	Incarnation  string `json:"incarnation"`
	LastOwner    string `json:"lastOwner"`
	Fence        int64  `json:"fence"`
	TTLMs        int64  `json:"ttlMs"`
	ToleranceMs  int64  `json:"toleranceMs"`
	Floor        int64  `json:"floor"`
	ExpiresAt    int64  `json:"expiresAt"`
	Ceiling      int64  `json:"ceiling"`
	NextFloor    int64  `json:"nextFloor"`
	FloorUTC     string `json:"floorUTC"`
	ExpiresAtUTC string `json:"expiresAtUTC"`
	CeilingUTC   string `json:"ceilingUTC"`
	NextFloorUTC string `json:"nextFloorUTC"`
}

type jsonWaiter struct {
	Owner string `json:"owner"`
	Fence int64  `json:"fence"`
}

func decodeJSON(t *testing.T, r result, v any) {
	t.Helper()
	r.want(t, exitOK)
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("--json output does not decode: %v\n%s", err, r.stdout)
	}
}

// populate fills a store with one of everything: two keys, a live, a
// released and an expired slot, and a held lock with a waiter. It returns
// the leases and the lock fences.
func populate(t *testing.T, spec storeSpec) (live, released, expired store.Lease, holderFence, waiterFence int64) {
	t.Helper()
	ctx := t.Context()
	st := spec.open(t, store.WithOwner("holder"))
	if _, err := st.Ranges().Next(ctx, "orders", 100); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Ranges().Seal(ctx, "users/eu"); err != nil {
		t.Fatal(err)
	}
	w := store.Namespace{Name: "workers", Limit: 4, Tolerance: 50 * time.Millisecond}
	acquire := func(owner string, slot int, ttl time.Duration) store.Lease {
		l, err := st.Slots().Acquire(ctx, w, owner, store.AcquireOptions{TTL: ttl, Preferred: new(slot)})
		if err != nil {
			t.Fatal(err)
		}
		if l.Slot != slot {
			t.Fatalf("%s got slot %d, want %d", owner, l.Slot, slot)
		}
		return l
	}
	live = acquire("host-a", 0, time.Minute)
	released = acquire("host-b", 1, time.Minute)
	if err := st.Slots().ReleaseUsed(ctx, released, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	expired = acquire("host-c", 2, 100*time.Millisecond)
	waitPast(expired.Ceiling)

	held, err := st.Locks().Lock(ctx, "rebalance")
	if err != nil {
		t.Fatal(err)
	}
	waiter := spec.open(t, store.WithOwner("waiter"))
	wctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if l, err := waiter.Locks().Lock(wctx, "rebalance"); err == nil {
			l.Unlock(context.Background())
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		ws, err := st.Locks().Waiters(ctx, "rebalance")
		if err == nil && len(ws) == 2 {
			waiterFence = ws[1].Fence
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the waiter did not queue: %v, %v", ws, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return live, released, expired, held.Fence(), waiterFence
}

func TestInspectEmpty(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		spec := b.fresh(t)
		id := created(t, spec)
		r := ctl(with(args("inspect"), spec.flags())...)
		locks := "LOCKS: none"
		if b.noLocks != "" {
			locks = "LOCKS: unsupported by this driver"
		}
		r.want(t, exitOK, "id     "+id+"\n", "RANGES: none", "SLOTS: no namespaces", locks)
		var doc jsonReport
		decodeJSON(t, ctl(with(args("inspect", "--json"), spec.flags())...), &doc)
		if doc.ID == nil || *doc.ID != id {
			t.Errorf("--json id %v, want %s", doc.ID, id)
		}
		unsupported := 0 // the locks, of a driver without them
		if b.noLocks != "" {
			unsupported = 1
		}
		if doc.Keys == nil || doc.Namespaces == nil || (doc.Locks == nil && unsupported == 0) || doc.Unsupported == nil ||
			len(doc.Keys)+len(doc.Namespaces)+len(doc.Locks) != 0 || len(doc.Unsupported) != unsupported {
			t.Fatalf("empty store: want empty lists, got %+v", doc)
		}
	})
}

func TestInspectText(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		needLocks(t, b)
		spec := b.fresh(t)
		live, _, expired, holderFence, waiterFence := populate(t, spec)
		r := ctl(with(args("inspect"), spec.flags())...)
		r.want(t, exitOK, "RANGES (2 keys)", "SLOTS (1 namespace)", "LOCKS (1 lock)",
			"namespace workers: limit 4, tolerance 50ms, 3 slots used",
			utc(live.ExpiresAt)+" (in ", utc(expired.ExpiresAt)+" (", " ago)")
		for _, re := range []string{
			`(?m)^KEY\s+NEXT\s+SEALED$`,
			`(?m)^orders\s+100\s+no$`,
			`(?m)^users/eu\s+0\s+yes$`,
			`(?m)^\s+SLOT\s+STATE\s+OWNER\s+INCARNATION\s+LAST OWNER\s+FENCE\s+TTL\s+FLOOR\s+EXPIRES\s+CEILING\s+NEXT FLOOR$`,
			`(?m)^\s+0\s+live\s+host-a\s+` + live.Incarnation + `\s+-\s+1\s+1m0s\s+0\s+\S+ \(in \d+s\)`,
			`(?m)^\s+1\s+released\s+-\s+-\s+host-b\s+1\s+1m0s\s+0\s+-\s+-\s+\S+ \(\d+m?s ago\)$`,
			`(?m)^\s+2\s+expired\s+host-c\s+\S+\s+-\s+1\s+100ms\s+0\s+\S+ \(\d+m?s ago\)`,
			`(?m)^rebalance\s+holder\s+` + itoa(holderFence) + `\s+waiter \(fence ` + itoa(waiterFence) + `\)$`,
		} {
			if !regexp.MustCompile(re).MatchString(r.stdout) {
				t.Errorf("output does not match %s:\n%s", re, r.stdout)
			}
		}
	})
}

func TestInspectJSON(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		needLocks(t, b)
		spec := b.fresh(t)
		live, released, expired, holderFence, waiterFence := populate(t, spec)
		infos, err := spec.open(t).Slots().List(t.Context(), "workers")
		if err != nil {
			t.Fatal(err)
		}
		before := time.Now().UnixMilli()
		var doc jsonReport
		decodeJSON(t, ctl(with(args("inspect", "--json"), spec.flags())...), &doc)
		if doc.Schema != 1 || doc.Now < before || doc.NowUTC != utc(doc.Now) {
			t.Errorf("header: schema %d, now %d (%s)", doc.Schema, doc.Now, doc.NowUTC)
		}
		type key struct {
			Key    string
			Next   int64
			Sealed bool
		}
		var keys []key
		for _, k := range doc.Keys {
			keys = append(keys, key(k))
		}
		if diff := cmp.Diff([]key{{"orders", 100, false}, {"users/eu", 0, true}}, keys); diff != "" {
			t.Errorf("keys (-want +got):\n%s", diff)
		}
		if len(doc.Namespaces) != 1 {
			t.Fatalf("namespaces: %+v", doc.Namespaces)
		}
		ns := doc.Namespaces[0]
		if ns.Name != "workers" || ns.Limit != 4 || ns.ToleranceMs != 50 || ns.Sealed {
			t.Errorf("namespace %+v", ns)
		}
		var want []jsonSlot
		for i, in := range infos {
			want = append(want, jsonSlot{
				Slot: in.Slot, State: []string{"live", "released", "expired"}[i],
				Owner: in.Owner, Incarnation: in.Incarnation, LastOwner: in.LastOwner, Fence: in.Fence,
				TTLMs: in.TTL.Milliseconds(), ToleranceMs: in.Tolerance.Milliseconds(),
				Floor: in.Floor, ExpiresAt: in.ExpiresAt, Ceiling: in.Ceiling, NextFloor: in.NextFloor,
				FloorUTC: utc(in.Floor), ExpiresAtUTC: utc(in.ExpiresAt), CeilingUTC: utc(in.Ceiling), NextFloorUTC: utc(in.NextFloor),
			})
		}
		if diff := cmp.Diff(want, ns.Slots); diff != "" {
			t.Errorf("slots (-want +got):\n%s", diff)
		}
		if ns.Slots[0].Owner != "host-a" || ns.Slots[0].ExpiresAt != live.ExpiresAt ||
			ns.Slots[1].LastOwner != "host-b" || ns.Slots[1].Fence != released.Fence ||
			ns.Slots[2].Owner != "host-c" || ns.Slots[2].Ceiling != expired.Ceiling {
			t.Errorf("slots do not describe the leases taken: %+v", ns.Slots)
		}
		if len(doc.Locks) != 1 {
			t.Fatalf("locks: %+v", doc.Locks)
		}
		l := doc.Locks[0]
		if l.Name != "rebalance" || l.Holder == nil || *l.Holder != (jsonWaiter{"holder", holderFence}) ||
			len(l.Waiters) != 1 || l.Waiters[0] != (jsonWaiter{"waiter", waiterFence}) {
			t.Errorf("lock %+v (holder %+v)", l, l.Holder)
		}
		if len(doc.Unsupported) != 0 {
			t.Errorf("unsupported: %v", doc.Unsupported)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
