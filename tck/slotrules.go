package tck

import (
	"errors"
	"fmt"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// checkMostRecentFirst: an owner that held several slots gets its most
// recent free one back first, then the one before, ahead of the preferred
// slot and the search.
func checkMostRecentFirst(e *env) {
	ns := e.namespace("recent", 5)
	runs := []*store.Store{
		e.open(store.WithIncarnation("tck-recent-1")),
		e.open(store.WithIncarnation("tck-recent-2")),
		e.open(store.WithIncarnation("tck-recent-3")),
	}
	// Slots taken in the order 2, 0, 1, so that the most recent first is
	// neither the lowest nor the highest number first.
	var held []store.Lease
	for i, st := range runs {
		want := []int{2, 0, 1}[i]
		l := e.acquire(st, ns, "a", store.AcquireOptions{TTL: e.longTTL, Preferred: new(want)})
		e.wantSlot(l, want, "the preferred slot, free: the owner's other slots are live under other incarnations")
		held = append(held, l)
	}
	for _, i := range []int{2, 0, 1} { // the order of the releases does not matter
		e.fatalIf(runs[i].Slots().Release(e.ctx, held[i]), "Release of slot %d", held[i].Slot)
	}
	// The owner's index is now 1, 0, 2 (most recent first); slot 1 goes to
	// another owner that prefers it.
	x := e.acquire(e.open(), ns, "x", store.AcquireOptions{TTL: e.longTTL, Preferred: new(1)})
	e.wantSlot(x, 1, "the preferred slot, free; the owner has no last slots")
	pref := store.AcquireOptions{TTL: e.longTTL, Preferred: new(4)}
	const rule = " (see driver.SlotLeaseStore.Acquire: the owner's last slots, most recently acquired first)"
	e.wantSlot(e.acquire(runs[0], ns, "a", pref), 0,
		"its most recent slot 1 is taken: its next most recent, before its older slot 2 and the preferred 4"+rule)
	e.wantSlot(e.acquire(runs[1], ns, "a", pref), 2, "its oldest last slot, before the preferred 4"+rule)
	e.wantSlot(e.acquire(runs[2], ns, "a", pref), 4, "none of its last slots is free: the preferred one"+rule)
}

// checkExpiredFoundBySearch: an expired term is found by the search when
// it is neither the owner's last slot nor the preferred one.
// The namespace is full but for it, and it lies past the first 32 slots
// (a batch size a driver may search in).
func checkExpiredFoundBySearch(e *env) {
	const limit, late = 36, 33
	ns := e.namespace("search", limit)
	a, b := e.open(), e.open()
	for i := range limit {
		if i != late {
			e.wantSlot(e.acquire(a, ns, fmt.Sprintf("o-%d", i), store.AcquireOptions{TTL: e.longTTL, Preferred: new(i)}),
				i, "the preferred slot, free")
		}
	}
	short := e.acquire(b, ns, "short", store.AcquireOptions{TTL: e.ttl, Preferred: new(late)})
	e.wantSlot(short, late, "the preferred slot, free")
	e.waitUntil(short.ExpiresAt)
	var l store.Lease
	var err error
	if !e.eventually(e.prompt, func() bool {
		l, err = e.tryAcquire(a, ns, "newcomer", store.AcquireOptions{TTL: e.longTTL, Preferred: new(1)})
		return !errors.Is(err, store.ErrExhausted)
	}) || err != nil {
		e.t.Fatalf("a newcomer preferring a held slot could not take slot %d, whose term expired at %d (local clock now %d): %v",
			late, short.ExpiresAt, nowMillis(), err)
	}
	e.wantSlot(l, late, "the only free slot: its term expired")
	if l.Fence != short.Fence+1 || l.Floor < short.Ceiling {
		e.t.Errorf("term after the expired one has fence %d and floor %d, want %d and at least the old ceiling %d",
			l.Fence, l.Floor, short.Fence+1, short.Ceiling)
	}
}

// checkNoEarlyTakeover: another owner cannot take a live term in the last
// moments before its ExpiresAt, however large the tolerance. Whether a
// takeover came early is judged by the store's own times.
func checkNoEarlyTakeover(e *env) {
	a, b := e.open(), e.open()
	tol := min(e.scaled(time.Second), store.MaxTolerance)
	ns := store.Namespace{Name: "early", Limit: 1, Tolerance: tol}
	// A ttl a little above half the tolerance: the tries start soon after
	// the acquire, and a driver judging expiry a tolerance early would let
	// every one of them through.
	la := e.acquire(a, ns, "a", store.AcquireOptions{TTL: tol/2 + e.scaled(100*time.Millisecond)})
	// Try from half a tolerance before the expiry until it.
	e.waitUntil(la.ExpiresAt - tol.Milliseconds()/2)
	tries := 0
	for nowMillis() < la.ExpiresAt && e.ctx.Err() == nil {
		tries++
		lb, err := e.tryAcquire(b, ns, "b", e.long())
		if errors.Is(err, store.ErrExhausted) {
			select {
			case <-e.ctx.Done():
			case <-time.After(e.poll):
			}
			continue
		}
		e.fatalIf(err, "Acquire by another owner near the expiry")
		if at := lb.ExpiresAt - lb.TTL.Milliseconds(); at < la.ExpiresAt {
			e.t.Errorf("another owner took the slot at store time %d, %dms before the live term's expiry %d (tolerance %v)",
				at, la.ExpiresAt-at, la.ExpiresAt, tol)
		}
		return
	}
	if tries == 0 {
		e.t.Errorf("no Acquire could be tried before the expiry: the machine is too slow for this check's window of %v", tol/2)
	}
}

// checkReleaseExpired: releasing an expired term that nobody took succeeds
// and sets the next floor from used.
func checkReleaseExpired(e *env) {
	st := e.open()
	s := st.Slots()
	ns := e.namespace("release-late", 1)
	l := e.acquire(st, ns, "a", store.AcquireOptions{TTL: e.ttl})
	e.waitUntil(l.ExpiresAt + e.scaled(20*time.Millisecond).Milliseconds())
	used := l.ExpiresAt - 1 // inside [floor, ceiling)
	e.fatalIf(s.ReleaseUsed(e.ctx, l, used), "ReleaseUsed(%d) of an expired term nobody took", used)
	e.wantReleased(st, ns.Name, l.Slot, used+1, "release of an expired term with used: used+1")
	e.wantIs(s.Release(e.ctx, l), store.ErrLeaseLost, "second Release of the expired term")
	next := e.acquire(e.open(), ns, "b", e.long())
	e.wantSlot(next, l.Slot, "the released slot")
	e.wantFloor(next, used+1, "the next floor the late release set")
	if next.Fence != l.Fence+1 {
		e.t.Errorf("term after the late release has fence %d, want %d", next.Fence, l.Fence+1)
	}
}

// checkHighFloor: a term whose floor lies above now+ttl+tolerance (a short
// ttl after a long-ttl release, a seeded future floor) still gets a ceiling
// at or above its floor, and so does its renewal.
func checkHighFloor(e *env) {
	st := e.open()
	ns := e.namespace("high-floor", 1)
	long := e.acquire(st, ns, "a", e.long())
	e.fatalIf(st.Slots().Release(e.ctx, long), "Release of a long-ttl term")
	short := e.acquire(st, ns, "a", store.AcquireOptions{TTL: e.ttl})
	e.wantFloor(short, long.Ceiling, "no used: the old ceiling")
	e.wantCeilingAboveFloor(short, "a short-ttl term after a long-ttl release")
	e.wantCeilingAboveFloor(e.renew(st, short), "the renewal of that term")
	in, _ := e.slotInfo(st, ns.Name, 0)
	if in.Ceiling < in.Floor {
		e.t.Errorf("Slots lists ceiling %d below floor %d", in.Ceiling, in.Floor)
	}

	if !has[driver.SlotSeeder](st) {
		return
	}
	seeded := e.namespace("high-floor-seeded", 1)
	future := nowMillis() + time.Hour.Milliseconds()
	e.fatalIf(st.Slots().Seed(e.ctx, seeded, 0, 1, future), "Seed of a future floor")
	l := e.acquire(st, seeded, "a", store.AcquireOptions{TTL: e.ttl})
	if l.Floor < future {
		e.t.Errorf("term after Seed(next floor %d) has floor %d", future, l.Floor)
	}
	e.wantCeilingAboveFloor(l, "a term after a seeded future floor")
	e.wantCeilingAboveFloor(e.renew(st, l), "the renewal of that term")
}

func (e *env) wantCeilingAboveFloor(l store.Lease, what string) {
	e.t.Helper()
	if l.Ceiling < l.Floor {
		e.t.Errorf("%s: ceiling %d is %dms below floor %d: the holder may issue nothing, and the next term's floor would fall",
			what, l.Ceiling, l.Floor-l.Ceiling, l.Floor)
	}
}

// checkRenewClockBack: Renew never lowers ExpiresAt or Ceiling, even when
// the store's clock steps back by more than the ttl; the next term still
// starts above the highest ceiling. Needs the optional ClockStepper.
func checkRenewClockBack(e *env) {
	cs := e.clockStepper()
	st := e.open()
	s := st.Slots()
	ns := e.namespace("clock-back", 1)
	l := e.acquire(st, ns, "a", store.AcquireOptions{TTL: e.ttl})
	e.fatalIf(cs.StepClock(e.ctx, -e.longTTL), "StepClock(-%v)", e.longTTL)
	prev := l
	for i := range 2 {
		r, err := s.Renew(e.ctx, prev)
		e.fatalIf(err, "Renew #%d after the clock stepped back", i+1)
		if r.ExpiresAt < prev.ExpiresAt || r.Ceiling < prev.Ceiling {
			e.t.Errorf("Renew #%d after the clock stepped back %v lowered times: expiresAt %d -> %d, ceiling %d -> %d",
				i+1, e.longTTL, prev.ExpiresAt, r.ExpiresAt, prev.Ceiling, r.Ceiling)
		}
		prev = r
	}
	e.fatalIf(s.Release(e.ctx, prev), "Release")
	next := e.acquire(st, ns, "a", e.long())
	if next.Floor < max(l.Ceiling, prev.Ceiling) {
		e.t.Errorf("term after the clock stepped back has floor %d, below the old term's ceiling %d", next.Floor, max(l.Ceiling, prev.Ceiling))
	}
}

// checkOwnExpired: an owner's own term that expired is not its live term:
// the same incarnation asking again gets a new term on the slot, taken
// over as from anyone (fence + 1, floor at the old ceiling, the owner as
// LastOwner), not the old term back.
func checkOwnExpired(e *env) {
	const rule = "(see driver.SlotLeaseStore.Acquire: a live term of the same owner and incarnation is returned as it is; " +
		"an expired one is free, whoever held it, and a new term takes it over)"
	st := e.open()
	ns := e.namespace("own-expired", 1)
	l := e.acquire(st, ns, "a", store.AcquireOptions{TTL: e.ttl})
	e.waitUntil(l.ExpiresAt + e.scaled(20*time.Millisecond).Milliseconds())
	n := e.acquire(st, ns, "a", store.AcquireOptions{TTL: e.ttl})
	if n.Fence != l.Fence+1 {
		e.t.Fatalf("the same incarnation's Acquire after its term expired got fence %d, want a new term with %d %s", n.Fence, l.Fence+1, rule)
	}
	e.wantFloor(n, l.Ceiling, "a taken-over term starts at the old ceiling "+rule)
	if info, ok := e.slotInfo(st, ns.Name, 0); !ok || info.LastOwner != "a" {
		e.t.Errorf("Slots shows LastOwner %q after the owner's own expired term was taken over, want %q "+
			"(see driver.SlotLeaseStore.Acquire: LastOwner becomes the taken-over term's owner)", info.LastOwner, "a")
	}
}

// checkExpiryBoundary: with the clock stopped (ClockSetter), a term is
// live until the instant before its ExpiresAt and free at it, for another
// owner and for its own.
func checkExpiryBoundary(e *env) {
	const rule = "(see driver.SlotLeaseStore.Acquire: expired when now >= ExpiresAt; never a live term of another owner)"
	cs := harnessPart[ClockSetter](e, "stops the store's clock at the expiry")
	set := func(ms int64) { e.fatalIf(cs.SetClock(e.ctx, time.UnixMilli(ms)), "ClockSetter.SetClock") }
	set(clockStart)
	a, b := e.open(), e.open()
	ns := store.Namespace{Name: "boundary", Limit: 1}
	l := e.acquire(a, ns, "a", store.AcquireOptions{TTL: e.ttl})
	set(l.ExpiresAt - 1)
	if got, err := e.tryAcquire(b, ns, "b", e.long()); !errors.Is(err, store.ErrExhausted) {
		e.t.Fatalf("Acquire by another owner 1 ms before the term's expiry: %s, %v; want ErrExhausted %s", leaseText(got), err, rule)
	}
	set(l.ExpiresAt)
	n := e.acquire(b, ns, "b", e.long())
	if n.Fence != l.Fence+1 {
		e.t.Errorf("Acquire by another owner at the term's ExpiresAt got fence %d, want %d %s", n.Fence, l.Fence+1, rule)
	}
}

// checkIndexLength: an owner's index keeps its last driver.OwnerIndexLen
// slots, no more: an older slot is not tried before the preferred one.
func checkIndexLength(e *env) {
	const rule = "(see driver.SlotLeaseStore: per owner key, the slots it held last, at most OwnerIndexLen)"
	n := driver.OwnerIndexLen + 2 // slots 0..n-1 held once by the owner, slot n+1 preferred
	ns := e.namespace("index-length", n+2)
	runs := make([]*store.Store, n)
	held := make([]store.Lease, n)
	for i := range n {
		runs[i] = e.open(store.WithIncarnation(fmt.Sprintf("tck-index-%d", i)))
		held[i] = e.acquire(runs[i], ns, "a", store.AcquireOptions{TTL: e.longTTL, Preferred: new(i)})
		e.wantSlot(held[i], i, "the preferred slot, free: the owner's other slots are live under other incarnations")
	}
	for i := range n {
		e.fatalIf(runs[i].Slots().Release(e.ctx, held[i]), "Release of slot %d", i)
	}
	// Other owners take the owner's OwnerIndexLen most recent slots.
	x := e.open()
	for i := n - driver.OwnerIndexLen; i < n; i++ {
		l := e.acquire(x, ns, fmt.Sprintf("x%d", i), store.AcquireOptions{TTL: e.longTTL, Preferred: new(i)})
		e.wantSlot(l, i, "the preferred slot, free")
	}
	l := e.acquire(e.open(), ns, "a", store.AcquireOptions{TTL: e.longTTL, Preferred: new(n + 1)})
	e.wantSlot(l, n+1, fmt.Sprintf("its %d most recent slots are taken, and its older ones are no longer in its index: the preferred slot %s",
		driver.OwnerIndexLen, rule))
}

// checkExpiryEdge: in rounds, another owner tries to take a term over
// without pause from a few milliseconds before its ExpiresAt until it
// succeeds; the takeover's store time (its ExpiresAt less its TTL, the
// now it was judged at) is never before the old term's ExpiresAt, not
// even by one millisecond (driver.SlotLeaseStore.Acquire: expired when
// now >= ExpiresAt). NoEarlyTakeover catches a tolerance early; this,
// without a ClockSetter (ExpiryBoundary), an expiry judged at now+1.
func checkExpiryEdge(e *env) {
	const rounds = 20
	a, b := e.open(), e.open()
	tries := 0
	for round := range rounds {
		ns := store.Namespace{Name: fmt.Sprintf("edge-%d", round), Limit: 1, Tolerance: e.tol}
		la := e.acquire(a, ns, "a", store.AcquireOptions{TTL: e.ttl})
		// The first try starts 1 to 4 ms before the expiry, a phase that
		// varies by round: tries a few ms long, started at one phase each
		// round, could step over the last millisecond every time.
		e.waitUntil(la.ExpiresAt - 1 - int64(round%4))
		deadline := time.UnixMilli(la.ExpiresAt).Add(e.prompt)
		// Every other round the slot is the taker's preferred one: a
		// driver may judge the slots it reads first apart from its search.
		o := e.long()
		if round%2 == 1 {
			o.Preferred = new(0)
		}
		for {
			tries++
			lb, err := e.tryAcquire(b, ns, "b", o)
			if errors.Is(err, store.ErrExhausted) && time.Now().Before(deadline) && e.ctx.Err() == nil {
				continue // at once: the last milliseconds are the ones tried
			}
			e.fatalIf(err, "Acquire by another owner of %s, whose term expires at %d (local clock now %d)", ns.Name, la.ExpiresAt, nowMillis())
			if at := lb.ExpiresAt - lb.TTL.Milliseconds(); at < la.ExpiresAt {
				e.t.Fatalf("round %d: another owner took the slot at store time %d, %dms before the live term's ExpiresAt %d "+
					"(see driver.SlotLeaseStore.Acquire: expired when now >= ExpiresAt)", round, at, la.ExpiresAt-at, la.ExpiresAt)
			}
			break
		}
	}
	e.t.Logf("%d acquires tried over %d rounds", tries, rounds)
}
