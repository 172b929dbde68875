package tck

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

func slotChecks() []check {
	return []check{
		{"FirstTerm", needSlots, checkFirstTerm},
		{"ConfigMismatch", needSlots, checkConfigMismatch},
		{"InvalidArguments", needSlots, checkSlotArguments},
		{"ChoiceOrder", needSlots, checkChoiceOrder},
		{"Exhaustion", needSlots, checkExhaustion},
		{"ConcurrentAcquire", needSlots, checkConcurrentAcquire},
		{"Churn", needSlots, checkSlotChurn},
		{"Renew", needSlots, checkRenew},
		{"RenewAfterExpiry", needSlots, checkRenewAfterExpiry},
		{"ReleaseFloor", needSlots, checkReleaseFloor},
		{"Fence", needSlots, checkFence},
		{"Takeover", needSlots, checkTakeover},
		{"Reclaim", needSlots, checkReclaim},
		{"SameIncarnation", needSlots, checkSameIncarnation},
		{"Listing", needSlots, checkListing},
		{"Seed", needSlots, checkSeed},
		{"Layout", needSlots, checkLayout},
		{"MostRecentFirst", needSlots, checkMostRecentFirst},
		{"ExpiredFoundBySearch", needSlots, checkExpiredFoundBySearch},
		{"NoEarlyTakeover", needSlots, checkNoEarlyTakeover},
		{"ReleaseExpired", needSlots, checkReleaseExpired},
		{"HighFloor", needSlots, checkHighFloor},
		{"RenewClockBack", needSlots, checkRenewClockBack},
		{"ForgedLease", needSlots, checkForgedLease},
		{"OwnExpired", needSlots, checkOwnExpired},
		{"ExpiryBoundary", needSlots, checkExpiryBoundary},
		{"ExpiryEdge", needSlots, checkExpiryEdge},
		{"LastFree", needSlots, checkLastFree},
		{"IndexLength", needSlots, checkIndexLength},
		{"Seal", needSlots, checkSlotSeal},
	}
}

// ignoreState leaves out the driver's own part of a lease.
var ignoreState = cmpopts.IgnoreUnexported(store.Lease{})

func (e *env) namespace(name string, limit int) store.Namespace {
	return store.Namespace{Name: name, Limit: limit, Tolerance: e.tol}
}

func (e *env) long() store.AcquireOptions { return store.AcquireOptions{TTL: e.longTTL} }

// tryAcquire takes a lease and, if it got one, checks what must hold of
// every lease.
func (e *env) tryAcquire(st *store.Store, ns store.Namespace, owner string, o store.AcquireOptions) (store.Lease, error) {
	e.t.Helper()
	l, err := st.Slots().Acquire(e.ctx, ns, owner, o)
	after := nowMillis()
	if err == nil {
		ttl := o.TTL
		if ttl == 0 {
			ttl = store.DefaultTTL
		}
		e.checkLease(l, ns, owner, st.Incarnation(), ttl, after)
	}
	return l, err
}

// acquire is tryAcquire that stops the check on an error.
func (e *env) acquire(st *store.Store, ns store.Namespace, owner string, o store.AcquireOptions) store.Lease {
	e.t.Helper()
	l, err := e.tryAcquire(st, ns, owner, o)
	e.fatalIf(err, "Acquire(%s, owner %q, %+v)", ns.Name, owner, o)
	return l
}

// checkLease checks the fields of a lease taken by owner under inc, and
// its times: floor <= ceiling, ceiling >= expiresAt + tolerance, and an
// expiry no later than the acquire's end plus ttl.
func (e *env) checkLease(l store.Lease, ns store.Namespace, owner, inc string, ttl time.Duration, after int64) {
	e.t.Helper()
	var bad []string
	if l.Namespace != ns.Name || l.Owner != owner || l.Incarnation != inc {
		bad = append(bad, fmt.Sprintf("names (%q, %q, %q), want (%q, %q, %q)",
			l.Namespace, l.Owner, l.Incarnation, ns.Name, owner, inc))
	}
	if l.TTL != ttl || l.Tolerance != ns.Tolerance {
		bad = append(bad, fmt.Sprintf("ttl %v and tolerance %v, want %v and %v", l.TTL, l.Tolerance, ttl, ns.Tolerance))
	}
	if l.Slot < 0 || l.Slot >= ns.Limit {
		bad = append(bad, fmt.Sprintf("slot %d outside [0, %d)", l.Slot, ns.Limit))
	}
	if l.Fence < 1 {
		bad = append(bad, fmt.Sprintf("fence %d below 1", l.Fence))
	}
	if l.Floor < 0 || l.Floor > l.Ceiling {
		bad = append(bad, fmt.Sprintf("floor %d not in [0, ceiling %d]", l.Floor, l.Ceiling))
	}
	if l.Ceiling < l.ExpiresAt+l.Tolerance.Milliseconds() {
		bad = append(bad, fmt.Sprintf("ceiling %d below expiresAt %d + tolerance %v", l.Ceiling, l.ExpiresAt, l.Tolerance))
	}
	if limit := after + ttl.Milliseconds() + e.slack; l.ExpiresAt > limit {
		bad = append(bad, fmt.Sprintf("expiresAt %d is %dms after now+ttl", l.ExpiresAt, l.ExpiresAt-limit+e.slack))
	}
	for _, b := range bad {
		e.t.Errorf("lease %+v: %s", l, b)
	}
}

// checkFresh checks that l's expiry was computed from a write between
// before and after (local clock, with the slack).
func (e *env) checkFresh(l store.Lease, before, after, prevExpiry int64) {
	e.t.Helper()
	ttl := l.TTL.Milliseconds()
	if lo := before + ttl - e.slack; l.ExpiresAt < lo {
		e.t.Errorf("expiresAt %d is %dms before now+ttl (%d)", l.ExpiresAt, before+ttl-l.ExpiresAt, before+ttl)
	}
	if hi := max(prevExpiry, after+ttl) + e.slack; l.ExpiresAt > hi {
		e.t.Errorf("expiresAt %d is %dms after now+ttl (%d)", l.ExpiresAt, l.ExpiresAt-hi+e.slack, after+ttl)
	}
}

// renew renews l, checking that the term is the same and that neither
// expiresAt nor ceiling went back.
func (e *env) renew(st *store.Store, l store.Lease) store.Lease {
	e.t.Helper()
	before := nowMillis()
	r, err := st.Slots().Renew(e.ctx, l)
	after := nowMillis()
	e.fatalIf(err, "Renew of slot %d fence %d", l.Slot, l.Fence)
	same := cmpopts.IgnoreFields(store.Lease{}, "ExpiresAt", "Ceiling")
	if diff := cmp.Diff(l, r, same, ignoreState); diff != "" {
		e.t.Errorf("Renew changed the term: -before +after:\n%s", diff)
	}
	if r.ExpiresAt < l.ExpiresAt || r.Ceiling < l.Ceiling {
		e.t.Errorf("Renew moved times back: expiresAt %d -> %d, ceiling %d -> %d",
			l.ExpiresAt, r.ExpiresAt, l.Ceiling, r.Ceiling)
	}
	if r.Ceiling < r.ExpiresAt+r.Tolerance.Milliseconds() || r.Floor > r.Ceiling {
		e.t.Errorf("renewed lease %+v: want floor <= ceiling and ceiling >= expiresAt + tolerance", r)
	}
	e.checkFresh(r, before, after, l.ExpiresAt)
	return r
}

// slotInfo returns what Slots lists for one slot.
func (e *env) slotInfo(st *store.Store, ns string, slot int) (store.SlotInfo, bool) {
	e.t.Helper()
	infos, err := st.Slots().List(e.ctx, ns)
	e.fatalIf(err, "Slots(%q)", ns)
	for _, in := range infos {
		if in.Slot == slot {
			return in, true
		}
	}
	return store.SlotInfo{}, false
}

// wantReleased checks that Slots lists slot as released, with the given
// floor for the next term.
func (e *env) wantReleased(st *store.Store, ns string, slot int, nextFloor int64, why string) {
	e.t.Helper()
	in, ok := e.slotInfo(st, ns, slot)
	switch {
	case !ok:
		e.t.Errorf("Slots(%q) does not list released slot %d", ns, slot)
	case in.Owner != "":
		e.t.Errorf("Slots(%q): released slot %d has owner %q, want none", ns, slot, in.Owner)
	case in.NextFloor != nextFloor:
		e.t.Errorf("Slots(%q): slot %d next floor %d, want %d (%s)", ns, slot, in.NextFloor, nextFloor, why)
	}
}

func (e *env) wantSlot(l store.Lease, slot int, why string) {
	e.t.Helper()
	if l.Slot != slot {
		e.t.Errorf("owner %q got slot %d, want %d (%s)", l.Owner, l.Slot, slot, why)
	}
}

// wantSearched checks that l, acquired with none of its owner's last slots
// nor its preferred slot free, got the first of the free slots in the
// search order from its owner and incarnation's point
// (driver.SearchStart), in a namespace of limit slots.
func (e *env) wantSearched(l store.Lease, limit int, free []int, why string) {
	e.t.Helper()
	start := driver.SearchStart(l.Owner, l.Incarnation, limit)
	for n := range driver.SearchOrder(start, limit) {
		if slices.Contains(free, n) {
			e.wantSlot(l, n, fmt.Sprintf("%s: the first free slot of %v from %d, the point of owner %q and incarnation %q "+
				"(see driver.SlotLeaseStore.Acquire and driver.SearchStart)", why, free, start, l.Owner, l.Incarnation))
			return
		}
	}
	e.t.Errorf("owner %q got slot %d, want none of %v is free (%s)", l.Owner, l.Slot, free, why)
}

func (e *env) wantFloor(l store.Lease, floor int64, why string) {
	e.t.Helper()
	if l.Floor != floor {
		e.t.Errorf("term with fence %d has floor %d, want %d (%s)", l.Fence, l.Floor, floor, why)
	}
}

// checkFirstTerm: the first term of a never-used slot: the slot searched
// from the acquire's own point, fence 1, floor 0, times from now, the
// default ttl.
func checkFirstTerm(e *env) {
	st := e.open()
	ns := e.namespace("first", 4)
	before := nowMillis()
	l := e.acquire(st, ns, "owner", e.long())
	after := nowMillis()
	e.wantSearched(l, ns.Limit, []int{0, 1, 2, 3}, "the first term in a namespace")
	if l.Fence != 1 || l.Floor != 0 {
		e.t.Errorf("first lease has fence %d, floor %d; want fence 1, floor 0", l.Fence, l.Floor)
	}
	e.checkFresh(l, before, after, 0)
	if want := l.ExpiresAt + ns.Tolerance.Milliseconds(); l.Ceiling != want {
		e.t.Errorf("first term's ceiling %d, want expiresAt + tolerance = %d", l.Ceiling, want)
	}
	// A zero ttl is the default ttl (checked by tryAcquire).
	l2 := e.acquire(e.open(), ns, "other", store.AcquireOptions{})
	e.wantSearched(l2, ns.Limit, slices.DeleteFunc([]int{0, 1, 2, 3}, func(n int) bool { return n == l.Slot }), "a second owner")
	if l2.Fence != 1 || l2.Floor != 0 {
		e.t.Errorf("second owner's lease has fence %d, floor %d; want fence 1, floor 0", l2.Fence, l2.Floor)
	}
}

// checkConfigMismatch: a namespace's limit and tolerance are fixed when it
// is created.
func checkConfigMismatch(e *env) {
	a, b := e.open(), e.open()
	ns := e.namespace("config", 4)
	first := e.acquire(a, ns, "a", e.long())
	others := []store.Namespace{
		{Name: ns.Name, Limit: 5, Tolerance: ns.Tolerance},
		{Name: ns.Name, Limit: 3, Tolerance: ns.Tolerance},
		{Name: ns.Name, Limit: 4, Tolerance: ns.Tolerance + time.Millisecond},
		{Name: ns.Name, Limit: 4, Tolerance: 0},
	}
	for _, other := range others {
		for i, st := range []*store.Store{a, b} {
			_, err := st.Slots().Acquire(e.ctx, other, "b", e.long())
			e.wantIs(err, store.ErrConfigMismatch, "store %d: Acquire with limit %d and tolerance %v of a namespace created with %d and %v",
				i, other.Limit, other.Tolerance, ns.Limit, ns.Tolerance)
		}
	}
	got, err := b.Slots().Namespaces(e.ctx)
	e.fatalIf(err, "Namespaces")
	if diff := cmp.Diff([]store.Namespace{ns}, got); diff != "" {
		e.t.Errorf("Namespaces after refused acquires: -want +got:\n%s", diff)
	}
	e.wantSearched(e.acquire(b, ns, "b", e.long()), ns.Limit,
		slices.DeleteFunc([]int{0, 1, 2, 3}, func(n int) bool { return n == first.Slot }), "the same settings are accepted")
}

// checkSlotArguments: bad namespaces, owners, ttls, preferred slots and
// leases are refused with ErrInvalidArgument, creating nothing.
func checkSlotArguments(e *env) {
	st := e.open()
	s := st.Slots()
	good := e.namespace("args", 4)
	try := func(ns store.Namespace, owner string, o store.AcquireOptions, format string, args ...any) {
		e.t.Helper()
		_, err := s.Acquire(e.ctx, ns, owner, o)
		e.wantIs(err, store.ErrInvalidArgument, format, args...)
	}
	for _, name := range badNames() {
		ns := good
		ns.Name = name
		try(ns, "owner", e.long(), "Acquire in namespace %s", quoteShort(name))
		_, err := s.List(e.ctx, name)
		e.wantIs(err, store.ErrInvalidArgument, "Slots(%s)", quoteShort(name))
	}
	for _, limit := range []int{0, -1, store.MaxSlots + 1} {
		ns := good
		ns.Limit = limit
		try(ns, "owner", e.long(), "Acquire in a namespace of limit %d", limit)
	}
	for _, tol := range []time.Duration{-time.Millisecond, 1500 * time.Microsecond, store.MaxTolerance + time.Millisecond} {
		ns := good
		ns.Tolerance = tol
		try(ns, "owner", e.long(), "Acquire in a namespace of tolerance %v", tol)
	}
	for _, owner := range badNames() {
		try(good, owner, e.long(), "Acquire by owner %s", quoteShort(owner))
	}
	for _, ttl := range []time.Duration{-time.Millisecond, 1500 * time.Microsecond, store.MaxTTL + time.Millisecond} {
		try(good, "owner", store.AcquireOptions{TTL: ttl}, "Acquire with ttl %v", ttl)
	}
	for _, p := range []int{-1, good.Limit, good.Limit + 10} {
		try(good, "owner", store.AcquireOptions{TTL: e.longTTL, Preferred: new(p)}, "Acquire with preferred slot %d of %d", p, good.Limit)
	}
	nss, err := s.Namespaces(e.ctx)
	e.fatalIf(err, "Namespaces")
	e.wantEmpty("Namespaces after refused acquires", nss)
	_, err = s.List(e.ctx, good.Name)
	e.wantIs(err, store.ErrNotFound, "Slots of a namespace only refused acquires named")

	// Bad leases and used values; the lease they were made from survives.
	l := e.acquire(st, good, "owner", e.long())
	e.wantIs(s.ReleaseUsed(e.ctx, l, -1), store.ErrInvalidArgument, "ReleaseUsed with used -1")
	bad := map[string]func(*store.Lease){
		"zero lease":        func(b *store.Lease) { *b = store.Lease{} },
		"fence 0":           func(b *store.Lease) { b.Fence = 0 },
		"owner with '/'":    func(b *store.Lease) { b.Owner = "a/b" },
		"empty namespace":   func(b *store.Lease) { b.Namespace = "" },
		"slot -1":           func(b *store.Lease) { b.Slot = -1 },
		"ttl 0":             func(b *store.Lease) { b.TTL = 0 },
		"empty incarnation": func(b *store.Lease) { b.Incarnation = "" },
	}
	for what, spoil := range bad {
		b := l
		spoil(&b)
		_, err := s.Renew(e.ctx, b)
		e.wantIs(err, store.ErrInvalidArgument, "Renew of a lease with %s", what)
		e.wantIs(s.Release(e.ctx, b), store.ErrInvalidArgument, "Release of a lease with %s", what)
	}
	e.renew(st, l)
	if in, ok := e.slotInfo(st, good.Name, l.Slot); !ok || in.Owner != "owner" || in.Fence != l.Fence {
		e.t.Errorf("after refused calls, Slots lists %+v for the lease's slot, want owner %q with fence %d", in, "owner", l.Fence)
	}
}

// checkChoiceOrder: the owner's last slot, then the preferred slot, then
// the first free slot from the acquire's own point (driver.SearchStart).
func checkChoiceOrder(e *env) {
	sts := []*store.Store{e.open(), e.open()}
	ns := e.namespace("order", 4)
	acq := func(i int, owner string, preferred *int) store.Lease {
		e.t.Helper()
		return e.acquire(sts[i%2], ns, owner, store.AcquireOptions{TTL: e.longTTL, Preferred: preferred})
	}
	release := func(i int, l store.Lease) {
		e.t.Helper()
		e.fatalIf(sts[i%2].Slots().Release(e.ctx, l), "Release of slot %d", l.Slot)
	}
	a := acq(0, "a", new(2))
	e.wantSlot(a, 2, "the preferred slot is free")
	b := acq(1, "b", nil)
	e.wantSearched(b, ns.Limit, []int{0, 1, 3}, "no preferred slot")
	free := slices.DeleteFunc([]int{0, 1, 3}, func(n int) bool { return n == b.Slot })
	c := acq(0, "c", new(2))
	e.wantSearched(c, ns.Limit, free, "the preferred slot is taken")
	z := slices.DeleteFunc(free, func(n int) bool { return n == c.Slot })[0] // never used
	release(0, a)
	release(1, b)
	// Free now: b's last, 2 (a's last) and z.
	e.wantSlot(acq(1, "a", new(z)), 2, fmt.Sprintf("the owner's last slot comes before the preferred slot %d", z))
	d := acq(0, "d", new(z))
	e.wantSlot(d, z, "the preferred slot comes before the search")
	ee := acq(1, "e", nil)
	e.wantSlot(ee, b.Slot, "the only free slot")
	// The index names a slot taken from another owner's history too (a
	// driver may write a used slot on another path than a new one).
	release(1, ee)
	release(0, d)
	e.wantSlot(acq(0, "e", new(z)), b.Slot,
		fmt.Sprintf("owner e's last slot, b's before, comes before the preferred slot %d", z))
}

// checkExhaustion: ErrExhausted only when every slot is held, and a
// released slot is taken again.
func checkExhaustion(e *env) {
	sts := []*store.Store{e.open(), e.open()}
	ns := e.namespace("full", 4)
	leases := make([]store.Lease, ns.Limit)
	free := []int{0, 1, 2, 3}
	for i := range ns.Limit {
		owner := fmt.Sprintf("owner-%d", i)
		l, err := e.tryAcquire(sts[i%2], ns, owner, e.long())
		e.fatalIf(err, "Acquire by %s with %d of %d slots held", owner, i, ns.Limit)
		e.wantSearched(l, ns.Limit, free, "no preferred slot")
		free = slices.DeleteFunc(free, func(n int) bool { return n == l.Slot })
		leases[l.Slot] = l
	}
	for _, o := range []store.AcquireOptions{
		e.long(),
		{TTL: e.longTTL, Reclaim: true},
		{TTL: e.longTTL, Preferred: new(2)},
	} {
		_, err := sts[1].Slots().Acquire(e.ctx, ns, "late", o)
		e.wantIs(err, store.ErrExhausted, "Acquire %+v with every slot held", o)
	}
	e.fatalIf(sts[0].Slots().Release(e.ctx, leases[2]), "Release of slot 2")
	l := e.acquire(sts[1], ns, "late", e.long())
	e.wantSlot(l, 2, "the released slot")
	if l.Fence != leases[2].Fence+1 {
		e.t.Errorf("new term of slot 2 has fence %d, want %d", l.Fence, leases[2].Fence+1)
	}
}

// checkConcurrentAcquire: owners acquiring at once from several stores get
// distinct slots, all of them, then ErrExhausted. The limit crosses the
// batch sizes drivers may search slots in.
func checkConcurrentAcquire(e *env) {
	const stores, perStore = 4, 25
	ns := e.namespace("crowd", stores*perStore)
	var mu sync.Mutex
	holder := map[int]string{}
	var wg sync.WaitGroup
	for s := range stores {
		// A hundred acquires of one namespace at once queue on each other
		// (one write at a time on SQLite): the last waits for the other 99,
		// so on a busy machine the store's usual 5s per call is not about
		// this check's promise (one holder per slot). Latency is measured
		// by benchmarks.
		st := e.open(store.WithTimeout(e.scaled(60 * time.Second)))
		for i := range perStore {
			owner := fmt.Sprintf("owner-%d-%d", s, i)
			wg.Go(func() {
				l, err := st.Slots().Acquire(e.ctx, ns, owner, e.long())
				if err != nil {
					e.errorf("Acquire by %s: %v", owner, err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if prev, dup := holder[l.Slot]; dup {
					e.errorf("slot %d leased to both %s and %s", l.Slot, prev, owner)
				}
				holder[l.Slot] = owner
			})
		}
	}
	wg.Wait()
	if e.t.Failed() {
		return
	}
	st := e.open()
	_, err := st.Slots().Acquire(e.ctx, ns, "one-too-many", e.long())
	e.wantIs(err, store.ErrExhausted, "Acquire with all %d slots held", ns.Limit)
	infos, err := st.Slots().List(e.ctx, ns.Name)
	e.fatalIf(err, "Slots")
	got := map[int]string{}
	for _, in := range infos {
		got[in.Slot] = in.Owner
	}
	if diff := cmp.Diff(holder, got); diff != "" {
		e.t.Errorf("Slots: -acquired +listed:\n%s", diff)
	}
}

// checkRenew: a renewal extends the term without moving anything back, and
// the next term starts above the highest ceiling any renewal reported, even
// when the release names an older copy of the lease.
func checkRenew(e *env) {
	st := e.open()
	ns := e.namespace("renew", 2)
	l0 := e.acquire(st, ns, "owner", e.long())
	e.waitUntil(nowMillis() + e.scaled(20*time.Millisecond).Milliseconds())
	r1 := e.renew(st, l0)
	if r1.ExpiresAt <= l0.ExpiresAt || r1.Ceiling <= l0.Ceiling {
		e.t.Errorf("a renewal %v later did not extend the term: expiresAt %d -> %d, ceiling %d -> %d",
			e.scaled(20*time.Millisecond), l0.ExpiresAt, r1.ExpiresAt, l0.Ceiling, r1.Ceiling)
	}
	r2 := e.renew(st, r1)
	r3 := e.renew(st, l0) // an older copy renews the same term
	if r3.ExpiresAt < r2.ExpiresAt || r3.Ceiling < r2.Ceiling {
		e.t.Errorf("Renew of an older copy moved times back: expiresAt %d -> %d, ceiling %d -> %d",
			r2.ExpiresAt, r3.ExpiresAt, r2.Ceiling, r3.Ceiling)
	}
	e.fatalIf(st.Slots().Release(e.ctx, l0), "Release of an older copy of the lease")
	e.wantReleased(st, ns.Name, l0.Slot, r3.Ceiling, "release without used: the highest ceiling of the term")
	next := e.acquire(st, ns, "owner", e.long())
	e.wantSlot(next, l0.Slot, "the owner's last slot")
	e.wantFloor(next, r3.Ceiling, "the highest ceiling of the released term")
}

// checkRenewAfterExpiry: a renewal after expiresAt continues a term nobody
// took.
func checkRenewAfterExpiry(e *env) {
	a, b := e.open(), e.open()
	ns := e.namespace("late", 1)
	l := e.acquire(a, ns, "a", store.AcquireOptions{TTL: e.ttl})
	e.waitUntil(l.ExpiresAt + 1)
	r := e.renew(a, l)
	if r.ExpiresAt <= l.ExpiresAt {
		e.t.Errorf("a renewal after expiry did not extend the term: expiresAt %d -> %d", l.ExpiresAt, r.ExpiresAt)
	}
	// The term is live again: another owner may take the slot only once the
	// store's clock has passed the new expiry.
	lb, err := e.tryAcquire(b, ns, "b", e.long())
	switch {
	case errors.Is(err, store.ErrExhausted):
	case err != nil:
		e.t.Errorf("Acquire by another owner: %v", err)
	case lb.ExpiresAt-lb.TTL.Milliseconds() < r.ExpiresAt:
		e.t.Errorf("another owner took the slot at store time %d, before the renewed term's expiry %d",
			lb.ExpiresAt-lb.TTL.Milliseconds(), r.ExpiresAt)
	}
}

// checkReleaseFloor: the next term starts at clamp(used+1, floor, ceiling)
// after a release with used, and at the ceiling after one without; a
// released term can neither be renewed nor released again.
func checkReleaseFloor(e *env) {
	st := e.open()
	s := st.Slots()
	ns := e.namespace("floor", 1)
	t1 := e.acquire(st, ns, "owner", e.long())
	e.wantFloor(t1, 0, "a never-used slot")

	used := t1.ExpiresAt - t1.TTL.Milliseconds() // the store's now: inside [floor, ceiling)
	e.fatalIf(s.ReleaseUsed(e.ctx, t1, used), "ReleaseUsed(%d) inside the term", used)
	e.wantReleased(st, ns.Name, 0, used+1, "used inside [floor, ceiling): used+1")
	t2 := e.acquire(st, ns, "owner", e.long())
	e.wantFloor(t2, used+1, "used inside [floor, ceiling): used+1")
	_, err := s.Renew(e.ctx, t1)
	e.wantIs(err, store.ErrLeaseLost, "Renew of a released term after a new term began")
	e.wantIs(s.Release(e.ctx, t1), store.ErrLeaseLost, "Release of a released term after a new term began")

	e.fatalIf(s.ReleaseUsed(e.ctx, t2, t2.Floor-5), "ReleaseUsed below the floor")
	e.wantReleased(st, ns.Name, 0, t2.Floor, "used below the floor: the floor")
	t3 := e.acquire(st, ns, "owner", e.long())
	e.wantFloor(t3, t2.Floor, "used below the floor: the floor")

	e.fatalIf(s.ReleaseUsed(e.ctx, t3, t3.Ceiling+1000), "ReleaseUsed above the ceiling")
	e.wantReleased(st, ns.Name, 0, t3.Ceiling, "used above the ceiling: the ceiling")
	t4 := e.acquire(st, ns, "owner", e.long())
	e.wantFloor(t4, t3.Ceiling, "used above the ceiling: the ceiling")

	e.fatalIf(s.Release(e.ctx, t4), "Release without used")
	e.wantReleased(st, ns.Name, 0, t4.Ceiling, "no used: the ceiling")
	t5 := e.acquire(st, ns, "owner", e.long())
	e.wantFloor(t5, t4.Ceiling, "no used: the ceiling")

	// A released term is nobody's, even while no new term has begun.
	e.fatalIf(s.Release(e.ctx, t5), "Release")
	e.wantIs(s.Release(e.ctx, t5), store.ErrLeaseLost, "second Release of a term")
	_, err = s.Renew(e.ctx, t5)
	e.wantIs(err, store.ErrLeaseLost, "Renew of a released term")
}

// checkFence: fences start at 1 and grow by exactly 1 with every term,
// whoever holds it.
func checkFence(e *env) {
	sts := []*store.Store{e.open(), e.open()}
	ns := e.namespace("fence", 1)
	for i := range 4 {
		owner := []string{"a", "b"}[i%2]
		l := e.acquire(sts[i%2], ns, owner, e.long())
		if l.Fence != int64(i+1) {
			e.t.Errorf("term %d (owner %s) has fence %d, want %d", i+1, owner, l.Fence, i+1)
		}
		e.fatalIf(sts[i%2].Slots().Release(e.ctx, l), "Release of term %d", i+1)
	}
	if in, _ := e.slotInfo(sts[0], ns.Name, 0); in.Fence != 4 {
		e.t.Errorf("Slots lists fence %d for slot 0 after 4 terms, want 4", in.Fence)
	}
}

// checkTakeover: after a term expires another owner takes the slot with the
// next fence and a floor at or above the old ceiling, and the old term is
// lost.
func checkTakeover(e *env) {
	a, b := e.open(), e.open()
	ns := e.namespace("takeover", 1)
	la := e.acquire(a, ns, "a", store.AcquireOptions{TTL: e.ttl})
	e.waitUntil(la.ExpiresAt)
	var lb store.Lease
	var err error
	took := e.eventually(e.prompt, func() bool {
		lb, err = e.tryAcquire(b, ns, "b", e.long())
		return !errors.Is(err, store.ErrExhausted)
	})
	if !took || err != nil {
		e.t.Fatalf("another owner could not take slot 0 after its term expired at %d (local clock now %d): %v",
			la.ExpiresAt, nowMillis(), err)
	}
	e.wantSlot(lb, 0, "the expired slot")
	if lb.Fence != la.Fence+1 {
		e.t.Errorf("takeover term has fence %d, want %d", lb.Fence, la.Fence+1)
	}
	if lb.Floor < la.Ceiling {
		e.t.Errorf("takeover term has floor %d below the expired term's ceiling %d: timestamps may repeat", lb.Floor, la.Ceiling)
	}
	if at := lb.ExpiresAt - lb.TTL.Milliseconds(); at < la.ExpiresAt {
		e.t.Errorf("slot taken over at store time %d, before the old term expired at %d", at, la.ExpiresAt)
	}
	_, err = a.Slots().Renew(e.ctx, la)
	e.wantIs(err, store.ErrLeaseLost, "Renew of a term taken over")
	e.wantIs(a.Slots().Release(e.ctx, la), store.ErrLeaseLost, "Release of a term taken over")
	e.wantIs(a.Slots().ReleaseUsed(e.ctx, la, la.Floor), store.ErrLeaseLost, "ReleaseUsed of a term taken over")
	e.renew(b, lb)
	if in, _ := e.slotInfo(a, ns.Name, 0); in.Owner != "b" || in.Fence != lb.Fence {
		e.t.Errorf("Slots lists owner %q fence %d for slot 0, want %q fence %d", in.Owner, in.Fence, "b", lb.Fence)
	}
	_, err = a.Slots().Acquire(e.ctx, ns, "a", e.long())
	e.wantIs(err, store.ErrExhausted, "Acquire by the old owner while the new term is live")
}

// checkReclaim: the same owner key under another incarnation takes its live
// term over only with Reclaim; without it, it gets another slot.
func checkReclaim(e *env) {
	s1 := e.open(store.WithIncarnation("tck-run-1"))
	s2 := e.open(store.WithIncarnation("tck-run-2"))
	s3 := e.open()
	ns := e.namespace("reclaim", 1)
	t1 := e.acquire(s1, ns, "worker", e.long())
	_, err := s2.Slots().Acquire(e.ctx, ns, "worker", e.long())
	e.wantIs(err, store.ErrExhausted, "Acquire by the same owner, other incarnation, without Reclaim")
	_, err = s3.Slots().Acquire(e.ctx, ns, "someone-else", store.AcquireOptions{TTL: e.longTTL, Reclaim: true})
	e.wantIs(err, store.ErrExhausted, "Acquire with Reclaim by another owner")

	t2 := e.acquire(s2, ns, "worker", store.AcquireOptions{TTL: e.longTTL, Reclaim: true})
	e.wantSlot(t2, 0, "reclaimed")
	if t2.Fence != t1.Fence+1 {
		e.t.Errorf("reclaimed term has fence %d, want %d", t2.Fence, t1.Fence+1)
	}
	if t2.Floor < t1.Ceiling {
		e.t.Errorf("reclaimed term has floor %d below the old term's ceiling %d: timestamps may repeat", t2.Floor, t1.Ceiling)
	}
	_, err = s1.Slots().Renew(e.ctx, t1)
	e.wantIs(err, store.ErrLeaseLost, "Renew of a reclaimed term")
	e.wantIs(s1.Slots().Release(e.ctx, t1), store.ErrLeaseLost, "Release of a reclaimed term")
	e.renew(s2, t2)

	// With a free slot, another incarnation without Reclaim gets that one.
	ns2 := e.namespace("reclaim-2", 2)
	u1 := e.acquire(s1, ns2, "worker", e.long())
	u2 := e.acquire(s2, ns2, "worker", e.long())
	if u2.Slot == u1.Slot {
		e.t.Errorf("another incarnation without Reclaim got the live slot %d", u1.Slot)
	}
	e.renew(s1, u1)
}

// checkSameIncarnation: a live term of the same owner and incarnation is
// returned as it is, with or without Reclaim. Two stores opened with the
// same WithIncarnation label are two runs: neither gets the other's term
// as its own.
func checkSameIncarnation(e *env) {
	s1 := e.open(store.WithIncarnation("tck-same"))
	s2 := e.open(store.WithIncarnation("tck-same"))
	if s1.Incarnation() == s2.Incarnation() {
		e.t.Fatalf("two stores opened with the label %q have the same incarnation %q (see store.WithIncarnation: a random part names each run)",
			"tck-same", s1.Incarnation())
	}
	ns := e.namespace("same", 2)
	l := e.acquire(s1, ns, "worker", e.long())
	for i, o := range []store.AcquireOptions{
		e.long(),
		{TTL: e.longTTL, Reclaim: true},
		{TTL: e.longTTL, Preferred: new(1)},
	} {
		got := e.acquire(s1, ns, "worker", o)
		if diff := cmp.Diff(l, got, ignoreState); diff != "" {
			e.t.Errorf("retry %d of Acquire %+v did not return the live term: -first +retry:\n%s", i+1, o, diff)
		}
	}
	infos, err := s2.Slots().List(e.ctx, ns.Name)
	e.fatalIf(err, "Slots")
	if len(infos) != 1 {
		e.t.Errorf("Slots lists %d slots after retried acquires of one term, want 1: %+v", len(infos), infos)
	}
	// The other run with the same label gets another slot, not the term.
	u := e.acquire(s2, ns, "worker", e.long())
	if u.Slot == l.Slot || u.Incarnation != s2.Incarnation() {
		e.t.Errorf("the second store with the label %q got slot %d under %q; want the free slot under its own incarnation %q (slot %d is live under %q)",
			"tck-same", u.Slot, u.Incarnation, s2.Incarnation(), l.Slot, l.Incarnation)
	}
	// With Reclaim it takes the term over: a new term above the old one's
	// timestamps, never the old term itself.
	one := e.namespace("same-1", 1)
	o1 := e.acquire(s1, one, "worker", e.long())
	o2 := e.acquire(s2, one, "worker", store.AcquireOptions{TTL: e.longTTL, Reclaim: true})
	if o2.Fence != o1.Fence+1 || o2.Floor < o1.Ceiling {
		e.t.Errorf("the second store with the same label reclaimed fence %d floor %d; want fence %d and a floor of at least the old ceiling %d",
			o2.Fence, o2.Floor, o1.Fence+1, o1.Ceiling)
	}

	// The live term wins even when the owner's last slots list a free slot
	// before it: here the owner key took and released another slot under another
	// incarnation in between.
	other := e.open(store.WithIncarnation("tck-other"))
	ns2 := e.namespace("same-2", 3)
	l0 := e.acquire(s1, ns2, "worker", e.long())
	l1 := e.acquire(other, ns2, "worker", e.long())
	e.wantSearched(l1, ns2.Limit, slices.DeleteFunc([]int{0, 1, 2}, func(n int) bool { return n == l0.Slot }),
		fmt.Sprintf("slot %d is live under another incarnation", l0.Slot))
	e.fatalIf(other.Slots().Release(e.ctx, l1), "Release of slot %d", l1.Slot)
	got := e.acquire(s1, ns2, "worker", e.long())
	if diff := cmp.Diff(l0, got, ignoreState); diff != "" {
		e.t.Errorf("a retried Acquire started a new term instead of returning its live term: -live +retry:\n%s", diff)
	}
}

// checkListing: Namespaces and Slots list what was done.
func checkListing(e *env) {
	st := e.open()
	nsB := e.namespace("list-b", 4)
	nsA := store.Namespace{Name: "list-a", Limit: 2, Tolerance: 0}
	la := e.acquire(st, nsB, "a", store.AcquireOptions{TTL: e.longTTL, Preferred: new(0)})
	// Slot 2 gets two terms: its fence passes slot 0's, so a listing by
	// fence or by recency is not the listing by slot number.
	lb := e.acquire(st, nsB, "b", store.AcquireOptions{TTL: e.longTTL, Preferred: new(2)})
	e.fatalIf(st.Slots().Release(e.ctx, lb), "Release")
	lb = e.acquire(st, nsB, "b", store.AcquireOptions{TTL: e.longTTL, Preferred: new(2)})
	e.wantSlot(lb, 2, "its last slot, released")
	e.fatalIf(st.Slots().Release(e.ctx, lb), "Release")
	lc := e.acquire(st, nsA, "c", e.long())

	other := e.open()
	nss, err := other.Slots().Namespaces(e.ctx)
	e.fatalIf(err, "Namespaces")
	if diff := cmp.Diff([]store.Namespace{nsA, nsB}, nss); diff != "" {
		e.t.Errorf("Namespaces: -want +got:\n%s", diff)
	}

	// Live slots show their term; a released one its last owner and next
	// floor.
	live := func(l store.Lease) store.SlotInfo {
		return store.SlotInfo{Slot: l.Slot, Owner: l.Owner, Incarnation: l.Incarnation, Fence: l.Fence,
			TTL: l.TTL, Tolerance: l.Tolerance, Floor: l.Floor, ExpiresAt: l.ExpiresAt, Ceiling: l.Ceiling}
	}
	liveOnly := cmpopts.IgnoreFields(store.SlotInfo{}, "LastOwner", "NextFloor")
	infos, err := other.Slots().List(e.ctx, nsB.Name)
	e.fatalIf(err, "Slots(%q)", nsB.Name)
	if len(infos) != 2 {
		e.t.Fatalf("Slots(%q) lists %d slots, want 2 (0 held, 2 released): %+v", nsB.Name, len(infos), infos)
	}
	if diff := cmp.Diff(live(la), infos[0], liveOnly); diff != "" {
		e.t.Errorf("Slots(%q)[0]: -want +got:\n%s", nsB.Name, diff)
	}
	type released struct {
		Slot      int
		Owner     string
		LastOwner string
		Fence     int64
		NextFloor int64
	}
	wantRel := released{Slot: 2, LastOwner: "b", Fence: lb.Fence, NextFloor: lb.Ceiling}
	gotRel := released{infos[1].Slot, infos[1].Owner, infos[1].LastOwner, infos[1].Fence, infos[1].NextFloor}
	if diff := cmp.Diff(wantRel, gotRel); diff != "" {
		e.t.Errorf("Slots(%q)[1], a released slot: -want +got:\n%s", nsB.Name, diff)
	}
	infos, err = other.Slots().List(e.ctx, nsA.Name)
	e.fatalIf(err, "Slots(%q)", nsA.Name)
	if diff := cmp.Diff([]store.SlotInfo{live(lc)}, infos, liveOnly); diff != "" {
		e.t.Errorf("Slots(%q): -want +got:\n%s", nsA.Name, diff)
	}
	_, err = other.Slots().List(e.ctx, "list-missing")
	e.wantIs(err, store.ErrNotFound, "Slots of a missing namespace")
}

// checkSeed: the optional SlotSeeder raises a slot's history (fence and
// next floor) without lowering anything, and refuses a live term.
func checkSeed(e *env) {
	st := e.open()
	needDriver[driver.SlotSeeder](e, st)
	s := st.Slots()
	ns := e.namespace("seed", 3)
	pref := func(slot int) store.AcquireOptions { return store.AcquireOptions{TTL: e.longTTL, Preferred: new(slot)} }

	// A never-used slot, in a namespace the seed creates; seeding again is
	// harmless.
	for i := range 2 {
		e.fatalIf(s.Seed(e.ctx, ns, 1, 10, 5000), "Seed #%d of a never-used slot", i+1)
	}
	nss, err := s.Namespaces(e.ctx)
	e.fatalIf(err, "Namespaces")
	if diff := cmp.Diff([]store.Namespace{ns}, nss); diff != "" {
		e.t.Errorf("Namespaces after Seed: -want +got:\n%s", diff)
	}
	l := e.acquire(st, ns, "a", pref(1))
	e.wantSlot(l, 1, "the preferred, seeded slot")
	if l.Fence != 11 || l.Floor < 5000 {
		e.t.Errorf("first term after Seed(fence 10, next floor 5000) has fence %d and floor %d, want 11 and at least 5000", l.Fence, l.Floor)
	}

	// A live term is left alone.
	e.wantIs(s.Seed(e.ctx, ns, 1, 100, 1<<50), store.ErrLocked, "Seed of a slot with a live term")
	l = e.renew(st, l)

	// Nothing is lowered.
	e.fatalIf(s.Release(e.ctx, l), "Release")
	e.fatalIf(s.Seed(e.ctx, ns, 1, 3, 0), "Seed with lower values")
	l2 := e.acquire(st, ns, "a", pref(1))
	e.wantSlot(l2, 1, "the owner's last slot")
	if l2.Fence != l.Fence+1 || l2.Floor < l.Ceiling {
		e.t.Errorf("term after a lower Seed has fence %d and floor %d, want %d and at least %d", l2.Fence, l2.Floor, l.Fence+1, l.Ceiling)
	}
	e.wantIs(s.Seed(e.ctx, store.Namespace{Name: ns.Name, Limit: 4, Tolerance: ns.Tolerance}, 0, 1, 1),
		store.ErrConfigMismatch, "Seed with another limit")

	// An expired term: the next term still starts above what it could issue.
	le := e.acquire(st, ns, "b", store.AcquireOptions{TTL: e.ttl, Preferred: new(0)})
	e.wantSlot(le, 0, "the preferred slot, never used")
	e.waitUntil(le.ExpiresAt)
	if !e.eventually(e.prompt, func() bool {
		err = s.Seed(e.ctx, ns, 0, 0, 0)
		return !errors.Is(err, store.ErrLocked)
	}) || err != nil {
		e.t.Fatalf("Seed of a slot whose term expired at %d: %v", le.ExpiresAt, err)
	}
	lt := e.acquire(st, ns, "c", pref(0))
	e.wantSlot(lt, 0, "the preferred slot, its term expired")
	if lt.Fence != le.Fence+1 || lt.Floor < le.Ceiling {
		e.t.Errorf("term after seeding an expired one has fence %d and floor %d, want %d and at least %d", lt.Fence, lt.Floor, le.Fence+1, le.Ceiling)
	}

	for _, bad := range []struct {
		slot             int
		fence, nextFloor int64
	}{{-1, 1, 1}, {ns.Limit, 1, 1}, {2, -1, 1}, {2, 1, -1}} {
		e.wantIs(s.Seed(e.ctx, ns, bad.slot, bad.fence, bad.nextFloor), store.ErrInvalidArgument,
			"Seed(slot %d, fence %d, next floor %d)", bad.slot, bad.fence, bad.nextFloor)
	}
	if _, ok := e.slotInfo(st, ns.Name, 2); ok {
		e.t.Errorf("refused seeds changed slot 2")
	}

	// A seed of nothing (fence 0, next floor 0) still makes a never-used
	// slot a used one.
	e.fatalIf(s.Seed(e.ctx, ns, 2, 0, 0), "Seed(fence 0, next floor 0) of a never-used slot")
	if in, ok := e.slotInfo(st, ns.Name, 2); !ok || in.Owner != "" {
		e.t.Errorf("Slots after Seed(fence 0, next floor 0) of never-used slot 2: %+v, listed %v; want a released slot "+
			"(see driver.SlotSeeder.SeedSlot: a slot never used becomes a released slot, listed by Slots)", in, ok)
	}
}
