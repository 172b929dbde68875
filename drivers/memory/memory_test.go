package memory_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/drivers/memory"
)

// uniqueName gives each test its own shared state, even with -count=N.
func uniqueName(t *testing.T) string {
	return fmt.Sprintf("%s#%d", t.Name(), nameSeq.Add(1))
}

var nameSeq atomic.Int64

// open opens a portable store on the shared state name.
func open(t *testing.T, name string, opts ...store.Option) *store.Store {
	t.Helper()
	st, err := store.Open("memory", map[string]string{"name": name}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// fakeClock is a settable clock in milliseconds.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) now() int64   { return c.ms.Load() }
func (c *fakeClock) set(ms int64) { c.ms.Store(ms) }

// openClocked opens stores sharing one state driven by a fake clock; each
// incarnation names one store.
func openClocked(t *testing.T, start int64, incarnations ...string) (*fakeClock, []*store.Store) {
	t.Helper()
	name := uniqueName(t)
	clk := &fakeClock{}
	clk.set(start)
	var out []*store.Store
	for _, inc := range incarnations {
		d := memory.NewDriver(name)
		memory.SetClock(d, clk.now)
		st, err := store.OpenDriver(d, store.WithIncarnation(inc))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		out = append(out, st)
	}
	return clk, out
}

// eventually polls cond until it holds, for at most 10s: far more than
// it takes even on a loaded machine.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}

func TestOpen(t *testing.T) {
	if !slices.Contains(store.Drivers(), "memory") {
		t.Fatalf("memory is not registered: %v", store.Drivers())
	}
	_, err := store.Open("memory", map[string]string{"nmae": "x"})
	wantErr(t, err, driver.ErrInvalidArgument)
	if !strings.Contains(err.Error(), `"nmae"`) {
		t.Errorf("error %q does not name the unknown option", err)
	}
	d, err := store.Open("memory", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestSharedState(t *testing.T) {
	ctx := t.Context()
	name := uniqueName(t)
	a, b := open(t, name), open(t, name)
	if _, err := a.Ranges().Next(ctx, "k", 10); err != nil {
		t.Fatal(err)
	}
	if r, err := b.Ranges().Next(ctx, "k", 10); err != nil || r.Start != 10 {
		t.Fatalf("second store of the same name: %v, %v; want start 10", r, err)
	}
	for what, other := range map[string]*store.Store{
		"another name": open(t, uniqueName(t)),
		"no name":      open(t, ""),
	} {
		if next, _, err := other.Ranges().Current(ctx, "k"); err != nil || next != 0 {
			t.Errorf("%s sees next %d (%v); want a state of its own", what, next, err)
		}
	}
	// The state outlives its stores, like a server outlives its clients.
	a.Close()
	b.Close()
	if next, _, err := open(t, name).Ranges().Current(ctx, "k"); err != nil || next != 20 {
		t.Fatalf("reopened: next %d (%v), want 20", next, err)
	}
}

func TestRanges(t *testing.T) {
	ctx := t.Context()
	rs := open(t, uniqueName(t)).Ranges()
	if next, sealed, err := rs.Current(ctx, "a/b"); err != nil || next != 0 || sealed {
		t.Fatalf("missing key: %d %v %v", next, sealed, err)
	}
	for _, want := range []store.Range{{Start: 0, End: 100}, {Start: 100, End: 101}} {
		if got, err := rs.Next(ctx, "a/b", want.Len()); err != nil || got != want {
			t.Fatalf("Next: %v %v, want %v", got, err, want)
		}
	}
	for range 2 { // sealing twice is fine
		if next, err := rs.Seal(ctx, "a/b"); err != nil || next != 101 {
			t.Fatalf("Seal: %d %v", next, err)
		}
	}
	_, err := rs.Next(ctx, "a/b", 1)
	wantErr(t, err, store.ErrSealed)
	if next, sealed, _ := rs.Current(ctx, "a/b"); next != 101 || !sealed {
		t.Fatalf("after seal: %d %v", next, sealed)
	}
	if next, err := rs.Seal(ctx, "never"); err != nil || next != 0 {
		t.Fatalf("Seal of a missing key: %d %v", next, err)
	}

	if err := rs.Init(ctx, "moved", 500); err != nil {
		t.Fatal(err)
	}
	if err := rs.Init(ctx, "moved", 500); err != nil {
		t.Fatalf("Init at the same value: %v", err)
	}
	err = rs.Init(ctx, "moved", 600)
	wantErr(t, err, store.ErrConfigMismatch)
	if !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "600") {
		t.Errorf("mismatch error %q does not give both values", err)
	}
	if err := rs.Init(ctx, "a/b", 101); err != nil {
		t.Fatalf("Init of a sealed key at its value: %v", err)
	}
	if r, err := rs.Next(ctx, "moved", 5); err != nil || r.Start != 500 {
		t.Fatalf("Next after Init: %v %v", r, err)
	}

	keys, err := rs.Keys(ctx)
	if diff := cmp.Diff([]string{"a/b", "moved", "never"}, keys); err != nil || diff != "" {
		t.Fatalf("Keys (-want +got):\n%s%v", diff, err)
	}
}

func TestRangeOverflow(t *testing.T) {
	ctx := t.Context()
	rs := open(t, uniqueName(t), store.WithMaxStep(math.MaxInt64)).Ranges()
	const top = math.MaxInt64
	if err := rs.Init(ctx, "k", top-10); err != nil {
		t.Fatal(err)
	}
	_, err := rs.Next(ctx, "k", 11)
	wantErr(t, err, store.ErrExhausted)
	if next, _, _ := rs.Current(ctx, "k"); next != top-10 {
		t.Fatalf("a refused Next changed next to %d", next)
	}
	if r, err := rs.Next(ctx, "k", 10); err != nil || r != (store.Range{Start: top - 10, End: top}) {
		t.Fatalf("last range: %v %v", r, err)
	}
	_, err = rs.Next(ctx, "k", 1)
	wantErr(t, err, store.ErrExhausted)
	if r, err := rs.Next(ctx, "fresh", top); err != nil || r != (store.Range{Start: 0, End: top}) {
		t.Fatalf("whole range of a new key: %v %v", r, err)
	}
}

func TestRangesNeverTwice(t *testing.T) {
	ctx := t.Context()
	name := uniqueName(t)
	var (
		mu  sync.Mutex
		got []store.Range
		wg  sync.WaitGroup
	)
	for s := range 4 {
		rs := open(t, name).Ranges()
		for g := range 8 {
			wg.Go(func() {
				for i := range 100 {
					r, err := rs.Next(ctx, "k", int64(1+(s+g+i)%7))
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					got = append(got, r)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	sort.Slice(got, func(i, j int) bool { return got[i].Start < got[j].Start })
	var next int64
	for _, r := range got {
		if r.Start != next {
			t.Fatalf("range %v follows %d: overlap or gap", r, next)
		}
		next = r.End
	}
}

// The slot tests run on a fake clock starting at t0, with this namespace.
const (
	t0  = 1_000_000
	ttl = 100 * time.Millisecond
	tol = 50 * time.Millisecond
)

func ns(name string, limit int) store.Namespace {
	return store.Namespace{Name: name, Limit: limit, Tolerance: tol}
}

var opts = store.AcquireOptions{TTL: ttl}

// ignoreState leaves out the driver's state a store.Lease carries.
var ignoreState = cmpopts.IgnoreUnexported(store.Lease{})

func TestAcquireFirstTermAndRetry(t *testing.T) {
	ctx := t.Context()
	clk, sts := openClocked(t, t0, "inc-a", "inc-b")
	a, b := sts[0].Slots(), sts[1].Slots()
	first := store.AcquireOptions{TTL: opts.TTL, Preferred: new(0)}
	l, err := a.Acquire(ctx, ns("w", 4), "host-a", first)
	if err != nil {
		t.Fatal(err)
	}
	want := store.Lease{
		Namespace: "w", Slot: 0, Owner: "host-a", Incarnation: sts[0].Incarnation(), Fence: 1,
		TTL: ttl, Tolerance: tol, Floor: 0, ExpiresAt: t0 + 100, Ceiling: t0 + 150,
	}
	if diff := cmp.Diff(want, l, ignoreState); diff != "" {
		t.Fatalf("first lease (-want +got):\n%s", diff)
	}
	// A retry by the same owner and incarnation gets the live term as it
	// is: no new fence, no later expiry.
	clk.set(t0 + 40)
	again, err := a.Acquire(ctx, ns("w", 4), "host-a", opts)
	if diff := cmp.Diff(want, again, ignoreState); err != nil || diff != "" {
		t.Fatalf("retried acquire (-want +got):\n%s%v", diff, err)
	}
	if l, err := b.Acquire(ctx, ns("w", 4), "host-b", opts); err != nil || l.Slot == 0 || l.Fence != 1 {
		t.Fatalf("second owner: %+v %v; want a slot other than 0, fence 1", l, err)
	}
}

func TestReleaseFloor(t *testing.T) {
	// Term 1 [t0] released without used; term 2 at t0+1000 then has floor
	// t0+150, expiresAt t0+1100, ceiling t0+1150 and is released with used.
	const floor2, ceiling2 = t0 + 150, t0 + 1150
	for _, tc := range []struct {
		used      int64 // -1: unknown
		wantFloor int64
	}{
		{-1, ceiling2},
		{t0 + 500, t0 + 501},
		{10, floor2},          // below the floor: clamped up
		{t0 + 5000, ceiling2}, // past the ceiling: clamped down
	} {
		t.Run(fmt.Sprint(tc.used), func(t *testing.T) {
			ctx := t.Context()
			clk, sts := openClocked(t, t0, "inc")
			sl := sts[0].Slots()
			acquire := func(fence, floor int64) store.Lease {
				t.Helper()
				l, err := sl.Acquire(ctx, ns("w", 1), "host", opts)
				if err != nil || l.Fence != fence || l.Floor != floor {
					t.Fatalf("lease %+v, %v; want fence %d, floor %d", l, err, fence, floor)
				}
				return l
			}
			if err := sl.Release(ctx, acquire(1, 0)); err != nil {
				t.Fatal(err)
			}
			clk.set(t0 + 1000)
			l2 := acquire(2, floor2)
			if l2.Ceiling != ceiling2 {
				t.Fatalf("term 2 ceiling %d, want %d", l2.Ceiling, ceiling2)
			}
			var err error
			if tc.used < 0 {
				err = sl.Release(ctx, l2)
			} else {
				err = sl.ReleaseUsed(ctx, l2, tc.used)
			}
			if err != nil {
				t.Fatal(err)
			}
			infos, err := sl.List(ctx, "w")
			if err != nil || len(infos) != 1 || infos[0].Owner != "" ||
				infos[0].LastOwner != "host" || infos[0].NextFloor != tc.wantFloor {
				t.Fatalf("released slot %+v %v; want next floor %d", infos, err, tc.wantFloor)
			}
			acquire(3, tc.wantFloor)
			// The released term is gone for good.
			wantErr(t, sl.Release(ctx, l2), store.ErrLeaseLost)
		})
	}
}

func TestExpiryTakeover(t *testing.T) {
	ctx := t.Context()
	clk, sts := openClocked(t, t0, "inc-a", "inc-b")
	a, b := sts[0].Slots(), sts[1].Slots()
	la, err := a.Acquire(ctx, ns("w", 1), "host-a", opts)
	if err != nil {
		t.Fatal(err)
	}
	clk.set(t0 + 50)
	if la, err = a.Renew(ctx, la); err != nil || la.ExpiresAt != t0+150 || la.Ceiling != t0+200 {
		t.Fatalf("renew: %+v %v", la, err)
	}
	clk.set(la.ExpiresAt - 1)
	_, err = b.Acquire(ctx, ns("w", 1), "host-b", opts)
	wantErr(t, err, store.ErrExhausted)

	clk.set(la.ExpiresAt) // expired: now >= expiresAt
	lb, err := b.Acquire(ctx, ns("w", 1), "host-b", opts)
	if err != nil {
		t.Fatal(err)
	}
	if lb.Slot != 0 || lb.Fence != la.Fence+1 || lb.Floor < la.Ceiling {
		t.Fatalf("takeover %+v of %+v: want fence +1 and floor >= old ceiling", lb, la)
	}
	if lb.Floor > lb.Ceiling {
		t.Fatalf("takeover floor %d above its ceiling %d", lb.Floor, lb.Ceiling)
	}
	_, err = a.Renew(ctx, la)
	wantErr(t, err, store.ErrLeaseLost)
	wantErr(t, a.Release(ctx, la), store.ErrLeaseLost)
	infos, _ := b.List(ctx, "w")
	if len(infos) != 1 || infos[0].LastOwner != "host-a" || infos[0].Owner != "host-b" {
		t.Fatalf("slot after takeover: %+v", infos)
	}
}

// TestExpiryRealTime runs on the real clock, as the TCK does.
func TestExpiryRealTime(t *testing.T) {
	ctx := t.Context()
	name := uniqueName(t)
	a := open(t, name, store.WithIncarnation("a")).Slots()
	b := open(t, name, store.WithIncarnation("b")).Slots()
	space := store.Namespace{Name: "w", Limit: 1, Tolerance: 10 * time.Millisecond}
	short := store.AcquireOptions{TTL: 30 * time.Millisecond}
	la, err := a.Acquire(ctx, space, "host-a", short)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, space, "host-b", short); !errors.Is(err, store.ErrExhausted) &&
		time.Now().UnixMilli() < la.ExpiresAt {
		t.Fatalf("live slot taken: %v", err)
	}
	for time.Now().UnixMilli() < la.ExpiresAt {
		time.Sleep(time.Millisecond) // the test is about expiry
	}
	lb, err := b.Acquire(ctx, space, "host-b", short)
	if err != nil || lb.Fence != 2 || lb.Floor < la.Ceiling {
		t.Fatalf("takeover %+v %v of %+v", lb, err, la)
	}
}

func TestRenewNeverGoesBack(t *testing.T) {
	ctx := t.Context()
	clk, sts := openClocked(t, t0, "inc")
	sl := sts[0].Slots()
	l, err := sl.Acquire(ctx, ns("w", 1), "host", opts)
	if err != nil {
		t.Fatal(err)
	}
	step := func(now, wantExpires, wantCeiling int64) {
		t.Helper()
		clk.set(now)
		r, err := sl.Renew(ctx, l)
		if err != nil {
			t.Fatalf("renew at %d: %v", now, err)
		}
		if r.Fence != l.Fence || r.Floor != l.Floor || r.ExpiresAt != wantExpires || r.Ceiling != wantCeiling {
			t.Fatalf("renew at %d: %+v; want fence %d, floor %d, expiresAt %d, ceiling %d",
				now, r, l.Fence, l.Floor, wantExpires, wantCeiling)
		}
		l = r
	}
	step(t0+60, t0+160, t0+210)
	step(t0-500, t0+160, t0+210) // the clock went back: nothing moves back
	step(t0+100, t0+200, t0+250)
	// Expired, but nobody took the slot: the renew continues the term.
	step(t0+9000, t0+9100, t0+9150)
}

func TestReclaim(t *testing.T) {
	ctx := t.Context()
	_, sts := openClocked(t, t0, "run-1", "run-2", "other")
	old, restarted, other := sts[0].Slots(), sts[1].Slots(), sts[2].Slots()
	lo, err := old.Acquire(ctx, ns("w", 1), "host", opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = restarted.Acquire(ctx, ns("w", 1), "host", opts)
	wantErr(t, err, store.ErrExhausted) // no reclaim: the live term stays
	_, err = other.Acquire(ctx, ns("w", 1), "someone", store.AcquireOptions{TTL: ttl, Reclaim: true})
	wantErr(t, err, store.ErrExhausted) // reclaim is for the same owner key only

	ln, err := restarted.Acquire(ctx, ns("w", 1), "host", store.AcquireOptions{TTL: ttl, Reclaim: true})
	if err != nil {
		t.Fatal(err)
	}
	if ln.Slot != lo.Slot || ln.Incarnation != sts[1].Incarnation() || ln.Fence != lo.Fence+1 || ln.Floor < lo.Ceiling {
		t.Fatalf("reclaimed %+v from %+v: want same slot, fence +1, floor >= old ceiling", ln, lo)
	}
	_, err = old.Renew(ctx, lo)
	wantErr(t, err, store.ErrLeaseLost)
	wantErr(t, old.Release(ctx, lo), store.ErrLeaseLost)
	// Reclaim never takes a live term of its own incarnation: that term is
	// returned as it is.
	again, err := restarted.Acquire(ctx, ns("w", 1), "host", store.AcquireOptions{TTL: ttl, Reclaim: true})
	if diff := cmp.Diff(ln, again, ignoreState); err != nil || diff != "" {
		t.Fatalf("re-acquire with reclaim (-want +got):\n%s%v", diff, err)
	}
}

func TestChoiceOrder(t *testing.T) {
	ctx := t.Context()
	_, sts := openClocked(t, t0, "a1", "a2", "a3", "b", "a4")
	a1, a2, a3, b := sts[0].Slots(), sts[1].Slots(), sts[2].Slots(), sts[3].Slots()
	space := ns("w", 8)
	pref := func(n int) store.AcquireOptions { return store.AcquireOptions{TTL: ttl, Preferred: new(n)} }
	acquire := func(sl *store.SlotLeaseStore, owner string, preferred, want int) store.Lease {
		t.Helper()
		l, err := sl.Acquire(ctx, space, owner, pref(preferred))
		if err != nil || l.Slot != want {
			t.Fatalf("%s preferring %d: %+v %v; want slot %d", owner, preferred, l, err, want)
		}
		return l
	}
	l5 := acquire(a1, "host-a", 5, 5) // the preferred slot
	// The preferred slot is held: the first free from the other owner's
	// own point. Its name is picked so that point is none of the slots 5
	// to 7 host-a uses below (the incarnation is random: with a fixed name
	// one run in four collided).
	other := "host-b"
	for i := 0; ; i++ {
		if n := driver.SearchStart(other, sts[3].Incarnation(), space.Limit); n < 5 || n > 7 {
			break
		}
		other = fmt.Sprintf("host-b%d", i)
	}
	acquire(b, other, 5, driver.SearchStart(other, sts[3].Incarnation(), space.Limit))
	l6 := acquire(a2, "host-a", 6, 6) // own last slot is held by run a1
	if err := a1.Release(ctx, l5); err != nil {
		t.Fatal(err)
	}
	if err := a2.Release(ctx, l6); err != nil {
		t.Fatal(err)
	}
	// The owner index, most recent first, beats the preferred slot.
	acquire(a3, "host-a", 7, 6)
	// The next entry of the index comes before the preferred slot too.
	acquire(sts[4].Slots(), "host-a", 7, 5)
}

func TestOwnerIndexKeepsEight(t *testing.T) {
	ctx := t.Context()
	incs := make([]string, 10)
	for i := range incs {
		incs[i] = fmt.Sprint("run-", i)
	}
	_, sts := openClocked(t, t0, incs...)
	space := ns("w", 16)
	// Runs 0..8 of one owner hold slots 1..9 (each its preferred slot), so
	// the index lists slots 9 down to 2: slot 1 fell off.
	var first store.Lease
	for i, st := range sts[:9] {
		l, err := st.Slots().Acquire(ctx, space, "host", store.AcquireOptions{TTL: ttl, Preferred: new(i + 1)})
		if err != nil || l.Slot != i+1 {
			t.Fatalf("run %d: %+v %v", i, l, err)
		}
		if i == 0 {
			first = l
		}
	}
	if err := sts[0].Slots().Release(ctx, first); err != nil {
		t.Fatal(err)
	}
	// Slot 1 is free again but no longer indexed: run 9 gets its preferred.
	l, err := sts[9].Slots().Acquire(ctx, space, "host", store.AcquireOptions{TTL: ttl, Preferred: new(15)})
	if err != nil || l.Slot != 15 {
		t.Fatalf("run 9: %+v %v; want the preferred slot 15", l, err)
	}
}

func TestNamespaces(t *testing.T) {
	ctx := t.Context()
	_, sts := openClocked(t, t0, "inc")
	sl := sts[0].Slots()
	_, err := sl.List(ctx, "none")
	wantErr(t, err, store.ErrNotFound)
	for _, name := range []string{"zeta", "alpha"} {
		if _, err := sl.Acquire(ctx, ns(name, 4), "host", opts); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []store.Namespace{
		{Name: "zeta", Limit: 5, Tolerance: tol},
		{Name: "zeta", Limit: 4, Tolerance: 2 * tol},
	} {
		_, err := sl.Acquire(ctx, bad, "host", opts)
		wantErr(t, err, store.ErrConfigMismatch)
		if !strings.Contains(err.Error(), "limit 4") || !strings.Contains(err.Error(), "50ms") {
			t.Errorf("mismatch error %q does not give the stored values", err)
		}
	}
	got, err := sl.Namespaces(ctx)
	want := []store.Namespace{ns("alpha", 4), ns("zeta", 4)}
	if diff := cmp.Diff(want, got); err != nil || diff != "" {
		t.Fatalf("Namespaces (-want +got):\n%s%v", diff, err)
	}
}

func TestSlotsConcurrent(t *testing.T) {
	ctx := t.Context()
	name := uniqueName(t)
	const n = 16
	space := store.Namespace{Name: "w", Limit: n}
	slots := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		sl := open(t, name).Slots()
		wg.Go(func() {
			l, err := sl.Acquire(ctx, space, fmt.Sprint("host-", i), store.AcquireOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			slots <- l.Slot
		})
	}
	wg.Wait()
	close(slots)
	seen := map[int]bool{}
	for s := range slots {
		if seen[s] {
			t.Fatalf("slot %d leased twice", s)
		}
		seen[s] = true
	}
	_, err := open(t, name).Slots().Acquire(ctx, space, "one-too-many", store.AcquireOptions{})
	wantErr(t, err, store.ErrExhausted)
	infos, err := open(t, name).Slots().List(ctx, "w")
	if err != nil || len(infos) != n || !sort.SliceIsSorted(infos, func(i, j int) bool { return infos[i].Slot < infos[j].Slot }) {
		t.Fatalf("Slots: %d entries, %v", len(infos), err)
	}
}

func TestLockFIFO(t *testing.T) {
	ctx := t.Context()
	name := uniqueName(t)
	holder := open(t, name, store.WithOwner("holder")).Locks()
	first, err := holder.TryLock(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	_, err = holder.TryLock(ctx, "x")
	wantErr(t, err, store.ErrLocked)

	type got struct {
		i int
		l *store.Lock
	}
	granted := make(chan got)
	const n = 4
	for i := range n {
		lk := open(t, name, store.WithOwner(fmt.Sprint("w", i))).Locks()
		go func() {
			l, err := lk.Lock(ctx, "x")
			if err != nil {
				t.Error(err)
				return
			}
			granted <- got{i, l}
		}()
		// Start the next waiter only once this one is queued.
		eventually(t, "waiter to queue", func() bool {
			ws, _ := holder.Waiters(ctx, "x")
			return len(ws) == i+2
		})
	}
	ws, err := holder.Waiters(ctx, "x")
	if err != nil || ws[0].Owner != "holder" || ws[n].Owner != fmt.Sprint("w", n-1) {
		t.Fatalf("Waiters %+v %v", ws, err)
	}
	_, err = holder.TryLock(ctx, "x") // waiters alone also make TryLock fail
	wantErr(t, err, store.ErrLocked)

	prev := first
	for i := range n {
		if err := prev.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		g := <-granted
		if g.i != i || g.l.Fence() <= prev.Fence() {
			t.Fatalf("holder %d (fence %d) after fence %d; want waiter %d with a larger fence",
				g.i, g.l.Fence(), prev.Fence(), i)
		}
		prev = g.l
	}
	if err := prev.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := prev.Unlock(ctx); err != nil {
		t.Fatalf("second Unlock: %v", err)
	}
	if names, err := holder.List(ctx); err != nil || !slices.Equal(names, []string{"x"}) {
		t.Fatalf("Locks: %v %v", names, err)
	}
}

func TestLockCancel(t *testing.T) {
	ctx := t.Context()
	name := uniqueName(t)
	lk := open(t, name, store.WithOwner("h")).Locks()
	held, err := lk.Lock(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error)
	go func() {
		_, err := open(t, name, store.WithOwner("quitter")).Locks().Lock(cctx, "x")
		gaveUp <- err
	}()
	eventually(t, "quitter to queue", func() bool { ws, _ := lk.Waiters(ctx, "x"); return len(ws) == 2 })
	granted := make(chan *store.Lock)
	go func() {
		l, err := open(t, name, store.WithOwner("patient")).Locks().Lock(ctx, "x")
		if err != nil {
			t.Error(err)
		}
		granted <- l
	}()
	eventually(t, "patient to queue", func() bool { ws, _ := lk.Waiters(ctx, "x"); return len(ws) == 3 })

	cancel()
	wantErr(t, <-gaveUp, context.Canceled)
	ws, _ := lk.Waiters(ctx, "x")
	if len(ws) != 2 || ws[0].Owner != "h" || ws[1].Owner != "patient" {
		t.Fatalf("after cancel, Waiters %+v; want h then patient", ws)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if l := <-granted; l != nil {
		l.Unlock(ctx)
	}

	// A context already ended leaves no trace either.
	dead, stop := context.WithCancel(ctx)
	stop()
	_, err = lk.Lock(dead, "y")
	wantErr(t, err, context.Canceled)
	if ws, err := lk.Waiters(ctx, "y"); len(ws) != 0 && err == nil {
		t.Fatalf("cancelled Lock left %+v", ws)
	}
}

func TestLockStaleUnlock(t *testing.T) {
	ctx := t.Context()
	d := memory.NewDriver(uniqueName(t))
	defer d.Close()
	a, err := d.Lock(ctx, "x", "a", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := d.Lock(ctx, "x", "b", false)
	if err != nil {
		t.Fatal(err)
	}
	// A late, repeated unlock of a must not remove b's hold.
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("second Unlock: %v", err)
	}
	ws, _ := d.Waiters(ctx, "x")
	if diff := cmp.Diff([]driver.Waiter{{Owner: "b", Fence: b.Fence()}}, ws); diff != "" {
		t.Fatalf("Waiters (-want +got):\n%s", diff)
	}
}

func TestClose(t *testing.T) {
	ctx := t.Context()
	name := uniqueName(t)
	closing, staying := memory.NewDriver(name), memory.NewDriver(name)
	defer staying.Close()

	held, err := closing.Lock(ctx, "x", "closing", false)
	if err != nil {
		t.Fatal(err)
	}
	other, err := staying.Lock(ctx, "y", "staying", false)
	if err != nil {
		t.Fatal(err)
	}
	next := make(chan driver.Lock)
	go func() { // staying waits for x
		l, err := staying.Lock(ctx, "x", "staying", true)
		if err != nil {
			t.Error(err)
		}
		next <- l
	}()
	ended := make(chan error)
	go func() { // closing waits for y
		_, err := closing.Lock(ctx, "y", "closing", true)
		ended <- err
	}()
	for _, lock := range []string{"x", "y"} {
		eventually(t, "waiter on "+lock, func() bool { ws, _ := staying.Waiters(ctx, lock); return len(ws) == 2 })
	}

	if err := closing.Close(); err != nil {
		t.Fatal(err)
	}
	if err := closing.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	wantErr(t, <-ended, driver.ErrClosed)
	<-held.Lost()
	wantErr(t, held.Unlock(ctx), driver.ErrLeaseLost)
	if l := <-next; l == nil {
		t.Fatal("the lock of a closed store was not passed on")
	}
	select {
	case <-other.Lost():
		t.Fatal("closing one store lost another store's lock")
	default:
	}
	ws, _ := staying.Waiters(ctx, "y")
	if len(ws) != 1 || ws[0].Owner != "staying" {
		t.Fatalf("closed store's waiter left a trace: %+v", ws)
	}

	// Every operation of a closed store is refused.
	_, err = closing.Next(ctx, "k", 1)
	wantErr(t, err, driver.ErrClosed)
	_, err = closing.Acquire(ctx, driver.AcquireRequest{Namespace: driver.Namespace(ns("w", 1)), Owner: "o", Incarnation: "i", TTL: ttl})
	wantErr(t, err, driver.ErrClosed)
	_, err = closing.Lock(ctx, "z", "o", true)
	wantErr(t, err, driver.ErrClosed)
	_, err = closing.Locks(ctx)
	wantErr(t, err, driver.ErrClosed)
}

// TestExhaustedNamesUnusable: a slot passed over because its fence cannot
// grow is named in ErrExhausted, so an operator learns which slot to
// repair (driver.SlotLeaseStore.Acquire).
func TestExhaustedNamesUnusable(t *testing.T) {
	ctx := t.Context()
	d := memory.NewDriver("")
	defer d.Close()
	ns := driver.Namespace{Name: "full", Limit: 2}
	if err := d.SeedSlot(ctx, ns, 1, math.MaxInt64, 0); err != nil {
		t.Fatal(err)
	}
	req := driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "1", TTL: time.Hour}
	if _, err := d.Acquire(ctx, req); err != nil {
		t.Fatal(err)
	}
	req.Owner = "b"
	_, err := d.Acquire(ctx, req)
	if !errors.Is(err, driver.ErrExhausted) || !strings.Contains(err.Error(), "slot 1: fence 9223372036854775807 cannot grow") {
		t.Errorf("Acquire of a namespace with slot 0 held and slot 1 at fence MaxInt64: %v; want ErrExhausted naming slot 1 and why", err)
	}
}
