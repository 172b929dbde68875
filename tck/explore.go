package tck

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"pgregory.net/rapid"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// The Explore checks drive a driver and the model (model.go) with the same
// random operations and compare every answer. rapid shrinks a failing
// history to a short one and prints it as a script; the seed it prints
// (-rapid.seed=N, or the RAPID_SEED environment variable) replays it.

func exploreChecks() []check {
	return []check{
		{"Histories", needNothing, checkHistories},
		{"Linearizable", needNothing, checkLinearizable},
	}
}

// clockStart is where a history's clock starts when the harness can set
// it: 2026-01-01, far from 0 so that no time is mistaken for "unset".
const clockStart = 1_767_225_600_000

// Pools: small, so that operations collide; plain ASCII names.
var (
	exploreKeys   = []string{"a", "a/b", "b"}
	exploreSpaces = []string{"n", "m"}
	exploreOwners = []string{"w0", "w1"}
	exploreLocks  = []string{"l", "k"}
)

// exploreStores is how many stores a history opens on its storage.
const exploreStores = 3

// histories returns how many histories a check runs.
func (s Suite) histories() int {
	if s.Histories > 0 {
		return s.Histories
	}
	return 50
}

// noFailFiles keeps rapid from writing fail files into the driver's
// package directory (and from replaying those of other runs, such as the
// broken drivers' runs sharing that directory), unless the command line
// asks for them: the seed printed with a failure replays it.
var noFailFiles sync.Once

func quietRapid() {
	noFailFiles.Do(func() {
		set := false
		flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.nofailfile" })
		if f := flag.Lookup("rapid.nofailfile"); f != nil && !set && os.Getenv("RAPID_NOFAILFILE") == "" {
			_ = f.Value.Set("true")
		}
	})
}

// checkHistories runs Suite.Histories random histories of every declared
// capability against the model.
func checkHistories(e *env) {
	want := e.suite.histories()
	var ran atomic.Int64
	var failing atomic.Bool
	rapid.Check(e.t, func(t *rapid.T) {
		// rapid runs -rapid.checks cases (default 100); past the suite's
		// number the case is empty, until a failure: rapid then shrinks,
		// and every rerun must be a whole history.
		if !failing.Load() && ran.Add(1) > int64(want) {
			return
		}
		ok := false
		defer func() {
			if !ok {
				failing.Store(true)
			}
		}()
		h := newHistory(e, t)
		t.Repeat(h.actions())
		ok = !t.Failed()
	})
	// rapid's own line above counts its cases (-rapid.checks, default
	// 100), the empty ones past Suite.Histories too: say so, so that the
	// two counts of the log add up.
	cases := ran.Load()
	histories := min(cases, int64(want))
	e.t.Logf("ran %d random histories (Suite.Histories); rapid's count of %d tests includes %d empty cases past that number "+
		"(-rapid.checks sets how many cases it runs). A failure prints its seed; RAPID_SEED replays it",
		histories, cases, cases-histories)
}

// history is one random history: the stores on one storage, the model,
// and what the driver handed out so far.
type history struct {
	e        *env
	t        *rapid.T
	m        *model
	h        Harness
	clock    ClockSetter    // nil: the time-free subset
	stores   []*store.Store // closed ones too: they answer ErrClosed
	isClosed []bool
	// purged marks the stores open across a purge: a range store may then
	// refuse a key it saw higher (ErrCorrupt) rather than hand it out again.
	purged  []bool
	inc     []string // each store's incarnation
	opened  int
	leases  []store.Lease // every lease handed out, older copies included
	holds   []*runHold
	seeder  bool
	purger  bool
	ttls    []time.Duration
	advance []time.Duration
}

// runHold is a Lock call of the driver beside its model.
type runHold struct {
	mh     *modelHold
	st     *store.Store // the store of the Lock call
	lock   *store.Lock
	result chan holdResult // the Lock call's answer, once
	cancel context.CancelFunc
	done   bool // result read
}

type holdResult struct {
	lock *store.Lock
	err  error
}

func newHistory(e *env, t *rapid.T) *history {
	h := &history{e: e, t: t}
	hr, err := e.suite.NewHarness(e.ctx, e.t)
	if err != nil || hr == nil {
		t.Fatalf("NewHarness: %v", err)
	}
	h.h = hr
	t.Cleanup(func() {
		for _, st := range h.stores {
			if st != nil { // nil: its open failed, which the history reports
				_ = st.Close() // a second Close returns nil
			}
		}
		for _, rh := range h.holds {
			if !rh.done {
				rh.cancel()
				<-rh.result
			}
		}
		if err := hr.Close(); err != nil {
			t.Errorf("Harness.Close: %v", err)
		}
	})
	cs, timed := hr.(ClockSetter)
	if timed {
		h.clock = cs
		if err := cs.SetClock(e.ctx, time.UnixMilli(clockStart)); err != nil {
			t.Fatalf("ClockSetter.SetClock: %v", err)
		}
		h.ttls = []time.Duration{time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, store.MaxTTL}
		h.advance = []time.Duration{time.Millisecond, 49 * time.Millisecond, 50 * time.Millisecond,
			100 * time.Millisecond, time.Second, -time.Millisecond, -50 * time.Millisecond}
	} else {
		// Nothing may expire during a history on a real clock.
		h.ttls = []time.Duration{time.Hour, store.MaxTTL}
	}
	h.m = newModel(clockStart, timed)
	h.m.keepSlotFloor = e.suite.PurgeKeepsSlotFloor
	for range exploreStores {
		h.stores = append(h.stores, nil)
		h.isClosed = append(h.isClosed, false)
		h.purged = append(h.purged, false)
		h.inc = append(h.inc, "")
	}
	for i := range exploreStores {
		h.open(i)
	}
	h.seeder = has[driver.SlotSeeder](h.stores[0])
	h.purger = has[driver.Purger](h.stores[0])
	return h
}

// open opens store i with a new incarnation, as a restarted process.
func (h *history) open(i int) {
	d, err := h.h.NewStore(h.e.ctx)
	if err != nil || d == nil {
		h.t.Fatalf("Harness.NewStore: %v", err)
	}
	h.opened++
	st, err := store.OpenDriver(d, store.WithTimeout(h.e.scaled(5*time.Second)),
		store.WithOwner(fmt.Sprintf("s%d", i)), store.WithIncarnation(fmt.Sprintf("i%d", h.opened)), store.WithMaxStep(math.MaxInt64))
	if err != nil {
		_ = d.Close()
		h.t.Fatalf("store.OpenDriver: %v", err)
	}
	h.inc[i] = st.Incarnation() // the label and the store's random part
	h.stores[i], h.isClosed[i], h.purged[i] = st, false, false
}

// wentBack reports whether store i, open across a purge, refused key as
// one it saw higher before: the contract allows it (see driver.Purger).
// Whether the refused call still wrote is not said, so the model takes the
// key as a fresh store sees it.
func (h *history) wentBack(i int, key string, err error) bool {
	if !h.purged[i] || err == nil || errors.Is(err, store.ErrInvalidArgument) {
		return false
	}
	h.t.Logf("  s%d was open across the purge: it may refuse a key that went back", i)
	d, err := h.h.NewStore(h.ctx())
	if err != nil {
		h.t.Fatalf("Harness.NewStore: %v", err)
	}
	st, err := store.OpenDriver(d)
	if err != nil {
		_ = d.Close()
		h.t.Fatalf("store.OpenDriver: %v", err)
	}
	defer st.Close()
	keys, err := st.Ranges().Keys(h.ctx())
	if err != nil {
		h.t.Fatalf("Keys from a fresh store: %v", err)
	}
	next, sealed, err := st.Ranges().Current(h.ctx(), key)
	if err != nil {
		h.t.Fatalf("Current from a fresh store: %v", err)
	}
	delete(h.m.keys, key)
	if slices.Contains(keys, key) {
		h.m.keys[key] = &modelKey{next: next, sealed: sealed}
		h.t.Logf("  a fresh store sees %q at %d, sealed %v", key, next, sealed)
	}
	return true
}

func (h *history) actions() map[string]func(*rapid.T) {
	a := map[string]func(*rapid.T){}
	s := h.e.suite
	if s.Ranges {
		a["Next"], a["Current"], a["Seal"], a["Init"], a["Keys"] = h.next, h.current, h.seal, h.init, h.keys
	}
	if s.Slots {
		a["Acquire"], a["Renew"], a["Release"], a["Namespaces"], a["Slots"] = h.acquire, h.renew, h.release, h.namespaces, h.slots
		if h.seeder {
			a["Seed"] = h.seed
		}
	}
	if s.Locks {
		a["TryLock"], a["Lock"], a["Unlock"], a["Cancel"], a["Waiters"], a["Locks"] = h.tryLock, h.lockWait, h.unlock, h.cancel, h.waiters, h.lockList
	}
	if h.purger {
		a["Purge"] = h.purge
	}
	if h.clock != nil {
		a["Advance"] = h.step
	}
	a["Close"] = h.closeStore
	return a
}

// ---- helpers ----

// pick draws a store index; a closed store answers ErrClosed to everything.
func (h *history) pick(t *rapid.T) int { return rapid.IntRange(0, exploreStores-1).Draw(t, "store") }

// closed reports whether store i is closed, checking that op gave ErrClosed.
func (h *history) closed(i int, what string, err error) bool {
	if !h.isClosed[i] {
		return false
	}
	if !errors.Is(err, store.ErrClosed) && !errors.Is(err, store.ErrInvalidArgument) {
		h.t.Fatalf("%s on a closed store: got %v, want ErrClosed (driver.Store.Close: calls after Close are refused)", what, err)
	}
	return true
}

// store returns store i, open or closed.
func (h *history) store(i int) *store.Store { return h.stores[i] }

// wantErr fails the history unless err is of the kind want (nil: none).
func (h *history) wantErr(what, rule string, err, want error) {
	h.t.Helper()
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		h.t.Fatalf("%s: the driver said %v, the contract says %v\n\t(see %s)", what, errText(err), errText(want), rule)
	}
}

func errText(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

func (h *history) ctx() context.Context { return h.e.ctx }

// ---- ranges ----

func (h *history) next(t *rapid.T) {
	i, key := h.pick(t), rapid.SampledFrom(exploreKeys).Draw(t, "key")
	step := rapid.SampledFrom([]int64{1, 2, 7, 1000, 0, math.MaxInt64 - 1, math.MaxInt64}).Draw(t, "step")
	what := fmt.Sprintf("s%d.Next(%q, %d)", i, key, step)
	r, err := h.store(i).Ranges().Next(h.ctx(), key, step)
	t.Logf("%s -> %v, %v", what, r, err)
	if h.closed(i, what, err) || h.wentBack(i, key, err) {
		return
	}
	start, want := h.m.next(key, step)
	h.wantErr(what, "driver.RangeStore.Next", err, want)
	if err == nil && r.Start != start {
		t.Fatalf("%s: the driver gave [%d, %d), the contract says [%d, %d)\n\t(see driver.RangeStore.Next: the ranges of a key tile [0, next))",
			what, r.Start, r.End, start, start+step)
	}
}

func (h *history) current(t *rapid.T) {
	i, key := h.pick(t), rapid.SampledFrom(exploreKeys).Draw(t, "key")
	what := fmt.Sprintf("s%d.Current(%q)", i, key)
	next, sealed, err := h.store(i).Ranges().Current(h.ctx(), key)
	t.Logf("%s -> %d, %v, %v", what, next, sealed, err)
	if h.closed(i, what, err) || h.wentBack(i, key, err) {
		return
	}
	h.wantErr(what, "driver.RangeStore.Current", err, nil)
	if wn, ws := h.m.current(key); next != wn || sealed != ws {
		t.Fatalf("%s: the driver said (%d, sealed %v), the contract says (%d, sealed %v)\n\t(see driver.RangeStore.Current)", what, next, sealed, wn, ws)
	}
}

func (h *history) seal(t *rapid.T) {
	i, key := h.pick(t), rapid.SampledFrom(exploreKeys).Draw(t, "key")
	what := fmt.Sprintf("s%d.Seal(%q)", i, key)
	next, err := h.store(i).Ranges().Seal(h.ctx(), key)
	t.Logf("%s -> %d, %v", what, next, err)
	if h.closed(i, what, err) || h.wentBack(i, key, err) {
		return
	}
	h.wantErr(what, "driver.RangeStore.Seal", err, nil)
	if want := h.m.seal(key); next != want {
		t.Fatalf("%s: the driver said %d, the contract says %d\n\t(see driver.RangeStore.Seal: its final next value)", what, next, want)
	}
}

func (h *history) init(t *rapid.T) {
	i, key := h.pick(t), rapid.SampledFrom(exploreKeys).Draw(t, "key")
	next := rapid.SampledFrom([]int64{0, 5, math.MaxInt64 - 1000, math.MaxInt64 - 1, math.MaxInt64}).Draw(t, "next")
	what := fmt.Sprintf("s%d.Init(%q, %d)", i, key, next)
	err := h.store(i).Ranges().Init(h.ctx(), key, next)
	t.Logf("%s -> %v", what, err)
	if h.closed(i, what, err) || h.wentBack(i, key, err) {
		return
	}
	h.wantErr(what, "driver.RangeStore.Init", err, h.m.init(key, next))
}

func (h *history) keys(t *rapid.T) {
	i := h.pick(t)
	what := fmt.Sprintf("s%d.Keys()", i)
	keys, err := h.store(i).Ranges().Keys(h.ctx())
	t.Logf("%s -> %q, %v", what, keys, err)
	if h.closed(i, what, err) {
		return
	}
	if h.purged[i] && wentBackErr(err) {
		// A listing may refuse, as any read may, a key that went back
		// below what this store saw before the purge; it writes nothing.
		t.Logf("  s%d was open across the purge: it may refuse a key that went back", i)
		return
	}
	h.wantErr(what, "driver.RangeStore.Keys", err, nil)
	if want := h.m.keyList(); !slices.Equal(keys, want) {
		t.Fatalf("%s: the driver listed %q, the contract says %q\n\t(see driver.RangeStore.Keys: every existing key, sorted)", what, keys, want)
	}
}

// ---- slots ----

func (h *history) drawNamespace(t *rapid.T) store.Namespace {
	name := rapid.SampledFrom(exploreSpaces).Draw(t, "namespace")
	// Mostly the namespace's usual settings, sometimes others.
	settings := rapid.SampledFrom([]int{0, 0, 0, 1, 2}).Draw(t, "settings")
	ns := store.Namespace{Name: name, Limit: 2, Tolerance: 50 * time.Millisecond}
	switch settings {
	case 1:
		ns.Limit = 3
	case 2:
		ns.Tolerance = 0
	}
	if name == "m" { // a namespace of one slot
		ns.Limit--
	}
	return ns
}

func (h *history) acquire(t *rapid.T) {
	i := h.pick(t)
	ns := h.drawNamespace(t)
	owner := rapid.SampledFrom(exploreOwners).Draw(t, "owner")
	ttl := rapid.SampledFrom(h.ttls).Draw(t, "ttl")
	pref := rapid.IntRange(-1, ns.Limit-1).Draw(t, "preferred") // -1: none
	reclaim := rapid.Bool().Draw(t, "reclaim")
	opts := store.AcquireOptions{TTL: ttl, Reclaim: reclaim}
	if pref >= 0 {
		opts.Preferred = new(pref)
	}
	what := fmt.Sprintf("s%d.Acquire(%v, %q, ttl %v, preferred %d, reclaim %v) at %s", i, ns, owner, ttl, pref, reclaim, h.now())
	l, err := h.store(i).Slots().Acquire(h.ctx(), ns, owner, opts)
	t.Logf("%s -> %s, %v", what, leaseText(l), err)
	if h.closed(i, what, err) {
		return
	}
	req := acquireReq{ns: ns, owner: owner, inc: h.inc[i], ttl: ttl, preferred: pref, reclaim: reclaim}
	n, fresh, want := h.m.acquire(req)
	h.wantErr(what, "driver.SlotLeaseStore.Acquire", err, want)
	if err != nil {
		return
	}
	if fresh {
		h.adoptNow(l.ExpiresAt - ttl.Milliseconds())
		h.m.newTerm(req, n)
	}
	h.leases = append(h.leases, l)
	if w := h.m.lease(ns.Name, n); !sameLease(l, w) {
		t.Fatalf("%s: the driver gave %s, the contract says %s\n\t(see driver.SlotLeaseStore.Acquire: the slot order and the new term)", what, leaseText(l), leaseText(w))
	}
}

// adoptNow learns the store's clock from a result, for a driver whose clock
// the TCK does not set.
func (h *history) adoptNow(now int64) {
	if h.clock == nil && now > h.m.now {
		h.m.now = now
	}
}

func (h *history) now() string {
	if h.clock == nil {
		return "now"
	}
	return fmt.Sprintf("t+%d", h.m.now-clockStart)
}

func sameLease(a, b store.Lease) bool {
	return a.Namespace == b.Namespace && a.Slot == b.Slot && a.Owner == b.Owner && a.Incarnation == b.Incarnation &&
		a.Fence == b.Fence && a.TTL == b.TTL && a.Tolerance == b.Tolerance && a.Floor == b.Floor &&
		a.ExpiresAt == b.ExpiresAt && a.Ceiling == b.Ceiling
}

func leaseText(l store.Lease) string {
	if l.Fence == 0 {
		return "no lease"
	}
	return fmt.Sprintf("%s/%d{%s/%s fence %d ttl %v tol %v floor t+%d expires t+%d ceiling t+%d}",
		l.Namespace, l.Slot, l.Owner, l.Incarnation, l.Fence, l.TTL, l.Tolerance,
		l.Floor-clockStart, l.ExpiresAt-clockStart, l.Ceiling-clockStart)
}

func (h *history) drawLease(t *rapid.T) (store.Lease, bool) {
	if len(h.leases) == 0 {
		return store.Lease{}, false
	}
	return h.leases[rapid.IntRange(0, len(h.leases)-1).Draw(t, "lease")], true
}

func (h *history) renew(t *rapid.T) {
	l, ok := h.drawLease(t)
	if !ok {
		t.Skip("no lease yet")
	}
	i := h.pick(t)
	what := fmt.Sprintf("s%d.Renew(%s) at %s", i, leaseText(l), h.now())
	got, err := h.store(i).Slots().Renew(h.ctx(), l)
	t.Logf("%s -> %s, %v", what, leaseText(got), err)
	if h.closed(i, what, err) {
		return
	}
	if err == nil {
		h.adoptNow(got.ExpiresAt - l.TTL.Milliseconds())
	}
	h.wantErr(what, "driver.SlotLeaseStore.Renew", err, h.m.renew(l))
	if err != nil {
		return
	}
	h.leases = append(h.leases, got)
	if w := h.m.lease(l.Namespace, l.Slot); !sameLease(got, w) {
		t.Fatalf("%s: the driver gave %s, the contract says %s\n\t(see driver.SlotLeaseStore.Renew)", what, leaseText(got), leaseText(w))
	}
}

func (h *history) release(t *rapid.T) {
	l, ok := h.drawLease(t)
	if !ok {
		t.Skip("no lease yet")
	}
	i := h.pick(t)
	used := rapid.SampledFrom([]int64{-1, 0, l.Floor, l.Floor + 1, l.Ceiling - 1, l.Ceiling, l.Ceiling + 1000}).Draw(t, "used")
	var err error
	what := fmt.Sprintf("s%d.ReleaseUsed(%s, t+%d) at %s", i, leaseText(l), used-clockStart, h.now())
	if used < 0 {
		what = fmt.Sprintf("s%d.Release(%s) at %s", i, leaseText(l), h.now())
		err = h.store(i).Slots().Release(h.ctx(), l)
	} else {
		err = h.store(i).Slots().ReleaseUsed(h.ctx(), l, used)
	}
	t.Logf("%s -> %v", what, err)
	if h.closed(i, what, err) {
		return
	}
	h.wantErr(what, "driver.SlotLeaseStore.Release", err, h.m.release(l, used))
}

func (h *history) seed(t *rapid.T) {
	i := h.pick(t)
	ns := h.drawNamespace(t)
	n := rapid.IntRange(0, ns.Limit-1).Draw(t, "slot")
	fence := rapid.SampledFrom([]int64{0, 1, 5, math.MaxInt64 - 1, math.MaxInt64}).Draw(t, "fence")
	floor := rapid.SampledFrom([]int64{0, clockStart, clockStart + 500, clockStart + 1_000_000}).Draw(t, "nextFloor")
	what := fmt.Sprintf("s%d.Seed(%v, %d, %d, t+%d) at %s", i, ns, n, fence, floor-clockStart, h.now())
	err := h.store(i).Slots().Seed(h.ctx(), ns, n, fence, floor)
	t.Logf("%s -> %v", what, err)
	if h.closed(i, what, err) {
		return
	}
	h.wantErr(what, "driver.SlotSeeder.SeedSlot", err, h.m.seed(ns, n, fence, floor))
}

func (h *history) namespaces(t *rapid.T) {
	i := h.pick(t)
	what := fmt.Sprintf("s%d.Namespaces()", i)
	got, err := h.store(i).Slots().Namespaces(h.ctx())
	t.Logf("%s -> %v, %v", what, got, err)
	if h.closed(i, what, err) {
		return
	}
	h.wantErr(what, "driver.SlotLeaseStore.Namespaces", err, nil)
	if want := h.m.namespaces(); !slices.Equal(got, want) {
		t.Fatalf("%s: the driver listed %v, the contract says %v\n\t(see driver.SlotLeaseStore.Namespaces: sorted by name)", what, got, want)
	}
}

func (h *history) slots(t *rapid.T) {
	i := h.pick(t)
	ns := rapid.SampledFrom(exploreSpaces).Draw(t, "namespace")
	what := fmt.Sprintf("s%d.Slots(%q) at %s", i, ns, h.now())
	got, err := h.store(i).Slots().List(h.ctx(), ns)
	t.Logf("%s -> %s, %v", what, infosText(got), err)
	if h.closed(i, what, err) {
		return
	}
	want, werr := h.m.slotList(ns)
	h.wantErr(what, "driver.SlotLeaseStore.Slots", err, werr)
	if err != nil {
		return
	}
	if !sameInfos(got, want) {
		t.Fatalf("%s: the driver listed\n\t%s\nthe contract says\n\t%s\n\t(see driver.SlotLeaseStore.Slots, driver.SlotInfo)", what, infosText(got), infosText(want))
	}
}

// sameInfos compares listings; a slot with no term (released or seeded)
// is compared without ExpiresAt and Ceiling, which describe no term then.
func sameInfos(a, b []store.SlotInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		x, y := a[k], b[k]
		if x.Owner == "" && y.Owner == "" {
			x.ExpiresAt, x.Ceiling, y.ExpiresAt, y.Ceiling = 0, 0, 0, 0
		}
		if x != y {
			return false
		}
	}
	return true
}

func infosText(infos []store.SlotInfo) string {
	var b strings.Builder
	for _, s := range infos {
		fmt.Fprintf(&b, "[%d %s/%s last %q fence %d ttl %v tol %v floor t+%d expires t+%d ceiling t+%d next t+%d] ",
			s.Slot, s.Owner, s.Incarnation, s.LastOwner, s.Fence, s.TTL, s.Tolerance, s.Floor-clockStart,
			s.ExpiresAt-clockStart, s.Ceiling-clockStart, s.NextFloor-clockStart)
	}
	return b.String()
}

func (h *history) step(t *rapid.T) {
	d := rapid.SampledFrom(h.advance).Draw(t, "by")
	h.m.now += d.Milliseconds()
	t.Logf("clock moves by %v to t+%d", d, h.m.now-clockStart)
	if err := h.clock.SetClock(h.ctx(), time.UnixMilli(h.m.now)); err != nil {
		t.Fatalf("ClockSetter.SetClock: %v", err)
	}
}

// ---- locks ----

func (h *history) newHold(i int, name string) *runHold {
	mh := &modelHold{id: len(h.holds), name: name, store: i, owner: fmt.Sprintf("s%d", i)}
	rh := &runHold{mh: mh, st: h.stores[i], result: make(chan holdResult, 1), cancel: func() {}}
	h.holds = append(h.holds, rh)
	return rh
}

func (h *history) tryLock(t *rapid.T) {
	i, name := h.pick(t), rapid.SampledFrom(exploreLocks).Draw(t, "name")
	what := fmt.Sprintf("s%d.TryLock(%q)", i, name)
	k, err := h.store(i).Locks().TryLock(h.ctx(), name)
	if h.closed(i, what, err) {
		t.Logf("%s -> %v", what, err)
		return
	}
	rh := h.newHold(i, name)
	rh.result <- holdResult{k, err}
	t.Logf("%s -> %s %v", what, rh.mh, err)
	held, want := h.m.lock(rh.mh, false)
	h.wantErr(what, "driver.Locker.Lock (wait false)", err, want)
	if held {
		h.granted(rh, what)
	} else {
		rh.done = true
		rh.mh.state = holdFailed
		h.settle(i, name, what)
	}
}

// settle waits until a queue entry that a failed TryLock or a cancelled
// Lock left behind is gone: a driver removes it in the background (see
// driver.Locker.TryLock), and until then Waiters lists it and other
// TryLocks of the name may fail on it.
func (h *history) settle(i int, name, what string) {
	h.t.Helper()
	want := 0
	if l := h.m.locks[name]; l != nil {
		want = len(l.queue)
	}
	deadline := time.Now().Add(h.e.prompt)
	for {
		ws, err := h.store(i).Locks().Waiters(h.ctx(), name)
		if err == nil && len(ws) == want || want == 0 && errors.Is(err, store.ErrNotFound) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: its queue entry was not removed within %v: Waiters lists %v, %v; the contract says %d entries\n\t(see driver.Locker.TryLock)", what, h.e.prompt, ws, errText(err), want)
		}
		time.Sleep(5 * time.Millisecond) // a bounded poll of the driver's own state
	}
}

func (h *history) lockWait(t *rapid.T) {
	i, name := h.pick(t), rapid.SampledFrom(exploreLocks).Draw(t, "name")
	what := fmt.Sprintf("s%d.Lock(%q)", i, name)
	if h.isClosed[i] {
		_, err := h.store(i).Locks().Lock(h.ctx(), name)
		t.Logf("%s -> %v", what, err)
		h.closed(i, what, err)
		return
	}
	rh := h.newHold(i, name)
	ctx, cancel := context.WithCancel(h.ctx())
	rh.cancel = cancel
	st := h.stores[i]
	go func() {
		k, err := st.Locks().Lock(ctx, name)
		rh.result <- holdResult{k, err}
	}()
	t.Logf("%s -> %s", what, rh.mh)
	held, _ := h.m.lock(rh.mh, true)
	if held {
		h.granted(rh, what)
		return
	}
	// The call is queued once a listing shows it.
	want := len(h.m.locks[name].queue)
	var n int
	if !h.e.eventually(h.e.prompt, func() bool {
		ws, err := h.anyStore().Locks().Waiters(h.ctx(), name)
		n = len(ws)
		return err == nil && n == want
	}) {
		t.Fatalf("%s: Waiters never listed %d entries (last %d)\n\t(see driver.Locker.Waiters: the holder and waiters in lock order)", what, want, n)
	}
}

// anyStore returns an open store of the history, opening one if needed.
func (h *history) anyStore() *store.Store {
	for i, st := range h.stores {
		if !h.isClosed[i] {
			return st
		}
	}
	h.open(0)
	return h.stores[0]
}

// granted checks that rh's Lock call returned the lock, with a fence above
// every earlier holder's of the name.
func (h *history) granted(rh *runHold, what string) {
	t := h.t
	var r holdResult
	select {
	case r = <-rh.result:
	case <-time.After(h.e.prompt):
		t.Fatalf("%s: %s was granted the lock by the contract, but its Lock call did not return within %v\n\t(see driver.Locker.Lock: waiters get the lock in arrival order)", what, rh.mh, h.e.prompt)
	}
	rh.done = true
	if r.err != nil {
		t.Fatalf("%s: %s's Lock failed with %v, the contract grants it the lock\n\t(see driver.Locker.Lock)", what, rh.mh, r.err)
	}
	rh.lock = r.lock
	l := h.m.locks[rh.mh.name]
	f := r.lock.Fence()
	t.Logf("  %s holds %q with fence %d", rh.mh, rh.mh.name, f)
	if f <= l.lastFence {
		t.Fatalf("%s: %s got fence %d, not above %d, an earlier holder's\n\t(see driver.Lock.Fence: above every fence of every earlier holder of the name, across purges)", what, rh.mh, f, l.lastFence)
	}
	if rh.mh.fence != 0 && rh.mh.fence != f {
		t.Fatalf("%s: %s got fence %d, but Waiters showed it waiting with fence %d\n\t(see driver.Waiter.Fence: the fence it holds or will hold)", what, rh.mh, f, rh.mh.fence)
	}
	rh.mh.fence = f
	l.lastFence = f
}

func (h *history) drawHold(t *rapid.T, ok func(*runHold) bool) *runHold {
	var c []*runHold
	for _, rh := range h.holds {
		if ok(rh) {
			c = append(c, rh)
		}
	}
	if len(c) == 0 {
		t.Skip("no such hold")
	}
	return c[rapid.IntRange(0, len(c)-1).Draw(t, "hold")]
}

func (h *history) unlock(t *rapid.T) {
	rh := h.drawHold(t, func(rh *runHold) bool { return rh.lock != nil })
	what := fmt.Sprintf("%s.Unlock()", rh.mh)
	err := rh.lock.Unlock(h.ctx())
	t.Logf("%s -> %v", what, err)
	if (rh.st != h.stores[rh.mh.store] || h.isClosed[rh.mh.store]) && rh.mh.state != holdUnlocked && rh.mh.state != holdReported {
		h.wantErr(what, "driver.Store.Close: calls after Close are refused", err, store.ErrClosed)
		return
	}
	next, want := h.m.unlock(rh.mh)
	h.wantErr(what, "driver.Lock.Unlock", err, want)
	if next != nil {
		h.granted(h.runOf(next), what)
	}
}

func (h *history) runOf(mh *modelHold) *runHold { return h.holds[mh.id] }

func (h *history) cancel(t *rapid.T) {
	rh := h.drawHold(t, func(rh *runHold) bool { return rh.mh.state == holdWaiting })
	what := fmt.Sprintf("cancel %s's Lock", rh.mh)
	rh.cancel()
	h.m.cancel(rh.mh)
	r := h.result(rh, what)
	t.Logf("%s -> %v", what, r.err)
	h.wantErr(what, "driver.Locker.Lock: a waiter whose context ends returns the context's error", r.err, context.Canceled)
	h.settle(rh.mh.store, rh.mh.name, what)
}

// result waits for the answer of rh's Lock call.
func (h *history) result(rh *runHold, what string) holdResult {
	select {
	case r := <-rh.result:
		rh.done = true
		return r
	case <-time.After(h.e.prompt):
		h.t.Fatalf("%s: %s's Lock call did not return within %v", what, rh.mh, h.e.prompt)
	}
	return holdResult{}
}

func (h *history) waiters(t *rapid.T) {
	i, name := h.pick(t), rapid.SampledFrom(exploreLocks).Draw(t, "name")
	what := fmt.Sprintf("s%d.Waiters(%q)", i, name)
	ws, err := h.store(i).Locks().Waiters(h.ctx(), name)
	t.Logf("%s -> %v, %v", what, ws, err)
	if h.closed(i, what, err) {
		return
	}
	l := h.m.locks[name]
	if l == nil || len(l.queue) == 0 {
		if l != nil && l.used && err == nil && len(ws) == 0 {
			return // a free lock the driver still keeps
		}
		h.wantErr(what, "driver.Locker.Waiters: a name never used, or forgotten since, gives ErrNotFound", err, store.ErrNotFound)
		return
	}
	h.wantErr(what, "driver.Locker.Waiters", err, nil)
	var owners, wantOwners []string
	for _, w := range ws {
		owners = append(owners, w.Owner)
	}
	for _, mh := range l.queue {
		wantOwners = append(wantOwners, mh.owner)
	}
	if !slices.Equal(owners, wantOwners) {
		t.Fatalf("%s: the driver listed owners %q, the contract says %q\n\t(see driver.Locker.Waiters: the holder first, then the waiters in arrival order)", what, owners, wantOwners)
	}
	for k, w := range ws {
		mh := l.queue[k]
		if k > 0 && w.Fence <= ws[k-1].Fence {
			t.Fatalf("%s: fences %v do not grow along the queue\n\t(see driver.Waiter.Fence: the fence it holds or will hold; later in the queue, higher)", what, ws)
		}
		if w.Fence <= l.lastFence && mh.state == holdWaiting {
			t.Fatalf("%s: waiter %s shows fence %d, not above %d, an earlier holder's\n\t(see driver.Waiter.Fence)", what, mh, w.Fence, l.lastFence)
		}
		if mh.fence != 0 && mh.fence != w.Fence {
			t.Fatalf("%s: %s shows fence %d, but it holds or was listed with %d\n\t(see driver.Waiter.Fence: the fence it holds or will hold)", what, mh, w.Fence, mh.fence)
		}
		mh.fence = w.Fence
	}
}

func (h *history) lockList(t *rapid.T) {
	i := h.pick(t)
	what := fmt.Sprintf("s%d.Locks()", i)
	got, err := h.store(i).Locks().List(h.ctx())
	t.Logf("%s -> %q, %v", what, got, err)
	if h.closed(i, what, err) {
		return
	}
	h.wantErr(what, "driver.Locker.Locks", err, nil)
	if !slices.IsSorted(got) {
		t.Fatalf("%s: %q is not sorted\n\t(see driver.Locker.Locks)", what, got)
	}
	for _, name := range h.m.activeLocks() {
		if !slices.Contains(got, name) {
			t.Fatalf("%s: %q does not list %q, which is held or waited on\n\t(see driver.Locker.Locks)", what, got, name)
		}
	}
	for _, name := range got {
		if l := h.m.locks[name]; l == nil || !l.used {
			t.Fatalf("%s: %q lists %q, never used (or purged since)\n\t(see driver.Locker.Locks)", what, got, name)
		}
	}
}

// ---- stores ----

func (h *history) closeStore(t *rapid.T) {
	i := h.pick(t)
	if h.isClosed[i] {
		t.Logf("s%d reopens", i)
		h.open(i)
		return
	}
	what := fmt.Sprintf("s%d.Close()", i)
	err := h.stores[i].Close()
	t.Logf("%s -> %v", what, err)
	h.isClosed[i] = true
	h.wantErr(what, "driver.Store.Close", err, nil)
	var lost, failed []*runHold
	for _, rh := range h.holds {
		if rh.mh.store == i && rh.mh.state == holdHeld {
			lost = append(lost, rh)
		}
		if rh.mh.store == i && rh.mh.state == holdWaiting {
			failed = append(failed, rh)
		}
	}
	granted := h.m.closeStore(i)
	h.ended(what, lost, failed, store.ErrClosed, "driver.Store.Close: every lock hold and wait of the store ends")
	for _, mh := range granted {
		h.granted(h.runOf(mh), what)
	}
}

// ended checks that the holds in lost are lost (Lost closed) and that the
// waits in failed returned an error of kind want (any error when nil).
func (h *history) ended(what string, lost, failed []*runHold, want error, rule string) {
	for _, rh := range lost {
		select {
		case <-rh.lock.Lost():
		case <-time.After(h.e.prompt):
			h.t.Fatalf("%s: %s's Lost did not close within %v\n\t(see %s)", what, rh.mh, h.e.prompt, rule)
		}
	}
	for _, rh := range failed {
		r := h.result(rh, what)
		if r.err == nil {
			_ = r.lock.Unlock(h.ctx())
			h.t.Fatalf("%s: %s's Lock returned the lock, the contract ends the wait\n\t(see %s)", what, rh.mh, rule)
		}
		if want != nil {
			h.wantErr(what+": "+rh.mh.String()+"'s Lock", rule, r.err, want)
		}
	}
}

func (h *history) purge(t *rapid.T) {
	i := h.pick(t)
	// A store whose clock the TCK does not set is judged against next
	// floors that a seed may have put anywhere; the model's now is only
	// learned from new terms, so take the local clock, a minute back, as
	// a lower bound first (unclocked histories' ceilings are an hour or
	// more ahead, their seeded floors far behind).
	h.adoptNow(time.Now().Add(-time.Minute).UnixMilli())
	what := fmt.Sprintf("s%d.Purge()", i)
	deleted, err := h.store(i).Purge(h.ctx())
	t.Logf("%s -> %d entries, %v", what, len(deleted), err)
	if h.closed(i, what, err) {
		return
	}
	if active := h.m.activeLocks(); len(active) > 0 {
		// A lock held or waited on: the purge deletes nothing.
		h.wantErr(what+" with "+strings.Join(active, ", ")+" in use", "driver.Purger", err, store.ErrLocked)
		return
	}
	if live := h.m.issuingSlots(); len(live) > 0 {
		// A term that may still issue: the purge deletes nothing.
		h.wantErr(what+" with slots "+strings.Join(live, ", ")+" before their ceilings or next floors", "driver.Purger", err, store.ErrLocked)
		return
	}
	if sealed := h.m.sealedKeys(); len(sealed) > 0 {
		// A key that moved away: the purge never forgets its seal.
		h.wantErr(what+" with sealed keys "+strings.Join(sealed, ", "), "driver.Purger", err, store.ErrSealed)
		return
	}
	h.wantErr(what, "driver.Purger.Purge", err, nil)
	h.m.purge()
	// The leases of before are the stopped instances': a purge is for
	// those (a stale lease's Release after a purge is Purge's misuse, not
	// what the histories explore).
	h.leases = nil
	for k := range h.purged {
		h.purged[k] = !h.isClosed[k]
	}
}
