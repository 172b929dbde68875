package tck

import (
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// A slot's history (its fence and next floor) only grows: seeding never
// lowers it, a seeded floor binds the next holder even over an expired
// term, and a purge does not start fences again.
func historyChecks() []check {
	return []check{
		{"SeedNeverLowers", needSlots, checkSeedNeverLowers},
		{"SeedAfterExpiry", needSlots, checkSeedAfterExpiry},
		{"PurgeKeepsSlotFences", needSlots, checkPurgeSlotFences},
		{"PurgeSlotFloor", needSlots, checkPurgeSlotFloor},
		{"Listed", needSlots, checkHistoryListed},
		{"FenceAtMax", needSlots, checkFenceAtMax},
	}
}

// wantHistory checks a slot's listed fence and next floor.
func (e *env) wantHistory(st *store.Store, ns string, slot int, fence, nextFloor int64, why string) {
	e.t.Helper()
	in, ok := e.slotInfo(st, ns, slot)
	if !ok || in.Fence != fence || in.NextFloor != nextFloor {
		e.t.Errorf("%s: Slots lists slot %d (listed: %v) with fence %d and next floor %d, want %d and %d",
			why, slot, ok, in.Fence, in.NextFloor, fence, nextFloor)
	}
}

// checkSeedNeverLowers: a seed with lower values changes neither the fence
// nor the next floor, before the slot's first term and after a release; a
// seed raising one of them leaves the other.
func checkSeedNeverLowers(e *env) {
	st := e.open()
	needDriver[driver.SlotSeeder](e, st)
	s, ns := st.Slots(), e.namespace("seed-lower", 1)
	e.fatalIf(s.Seed(e.ctx, ns, 0, 10, 5000), "Seed(fence 10, next floor 5000)")
	e.fatalIf(s.Seed(e.ctx, ns, 0, 3, 100), "Seed with lower values")
	e.wantHistory(st, ns.Name, 0, 10, 5000, "after a lower seed")
	e.fatalIf(s.Seed(e.ctx, ns, 0, 20, 100), "Seed(fence 20, next floor 100)")
	e.wantHistory(st, ns.Name, 0, 20, 5000, "after a seed raising only the fence")

	l := e.acquire(st, ns, "a", e.long())
	if l.Fence != 21 || l.Floor != 5000 {
		e.t.Errorf("term after the seeds has fence %d and floor %d, want 21 and 5000", l.Fence, l.Floor)
	}
	e.fatalIf(s.ReleaseUsed(e.ctx, l, l.Floor+10), "ReleaseUsed")
	e.fatalIf(s.Seed(e.ctx, ns, 0, 1, 0), "Seed(fence 1, next floor 0) of a released slot")
	e.wantHistory(st, ns.Name, 0, 21, l.Floor+11, "after a lower seed of a released slot")
	l2 := e.acquire(st, ns, "a", e.long())
	if l2.Fence != 22 || l2.Floor != l.Floor+11 {
		e.t.Errorf("term after a lower seed has fence %d and floor %d, want 22 and %d", l2.Fence, l2.Floor, l.Floor+11)
	}
}

// checkSeedAfterExpiry: seeding a slot whose term expired without a release
// ends that term (its holder's Renew gives ErrLeaseLost), and the next term
// starts at the seeded next floor even though it is above the old ceiling.
func checkSeedAfterExpiry(e *env) {
	a, b := e.open(), e.open()
	needDriver[driver.SlotSeeder](e, a)
	ns := e.namespace("seed-expired", 1)
	la := e.acquire(a, ns, "a", store.AcquireOptions{TTL: e.ttl})
	seeded := la.Ceiling + 3_600_000 // an hour above anything the term could issue
	e.waitUntil(la.ExpiresAt)
	var err error
	expired := e.eventually(e.prompt, func() bool {
		err = b.Slots().Seed(e.ctx, ns, 0, 0, seeded)
		return !errors.Is(err, store.ErrLocked)
	})
	if !expired || err != nil {
		e.t.Fatalf("Seed of slot 0 after its term expired at %d (local clock now %d): %v", la.ExpiresAt, nowMillis(), err)
	}
	if in, _ := e.slotInfo(b, ns.Name, 0); in.Owner != "" || in.LastOwner != "a" || in.NextFloor != seeded {
		e.t.Errorf("after the seed Slots lists owner %q, last owner %q, next floor %d; want none, a, %d",
			in.Owner, in.LastOwner, in.NextFloor, seeded)
	}
	_, err = a.Slots().Renew(e.ctx, la)
	e.wantIs(err, store.ErrLeaseLost, "Renew of an expired term a seed ended")
	lb := e.acquire(b, ns, "b", e.long())
	if lb.Fence != la.Fence+1 || lb.Floor != seeded {
		e.t.Errorf("term after the seed has fence %d and floor %d, want %d and the seeded %d (the old ceiling was %d)",
			lb.Fence, lb.Floor, la.Fence+1, seeded, la.Ceiling)
	}
}

// releaseUsed releases l saying it used nothing above its floor: the next
// floor is then not ahead of the clock, which would stop a purge (see
// driver.Purger).
func (e *env) releaseUsed(st *store.Store, l store.Lease) {
	e.t.Helper()
	e.fatalIf(st.Slots().ReleaseUsed(e.ctx, l, l.Floor), "ReleaseUsed")
}

// checkPurgeSlotFences: after a purge a slot's fences continue above the
// ones it had, as lock fences do: a stopped holder's fence is never handed
// out again.
func checkPurgeSlotFences(e *env) {
	st := e.open()
	needDriver[driver.Purger](e, st)
	ns := e.namespace("purge-fence", 1)
	var last int64
	for range 3 {
		l := e.acquire(st, ns, "a", e.long())
		e.releaseUsed(st, l)
		last = l.Fence
	}
	_, err := st.Purge(e.ctx)
	e.fatalIf(err, "Purge")
	l := e.acquire(e.open(), ns, "a", e.long())
	if l.Fence <= last {
		e.t.Errorf("slot 0's first term after a purge has fence %d, not above %d from before: fences must never repeat", l.Fence, last)
	}

	// Two namespaces, the first by name with the higher fences: the floor
	// is the highest of all (see driver.Purger: the slot fence floor is
	// store-wide).
	e.releaseUsed(st, l)
	for range 3 {
		l = e.acquire(st, ns, "a", e.long())
		e.releaseUsed(st, l)
	}
	high := l.Fence
	// Released: a live term stops a purge (Purge/LiveLease).
	e.releaseUsed(st, e.acquire(st, e.namespace("purge-fence-z", 1), "a", e.long()))
	_, err = st.Purge(e.ctx)
	e.fatalIf(err, "second Purge")
	l = e.acquire(e.open(), e.namespace("purge-fence-new", 1), "a", e.long())
	if l.Fence <= high {
		e.t.Errorf("the first term of a namespace made after a second purge has fence %d, not above %d from before "+
			"(see driver.Purger: every slot fence handed out later is above every one handed out before)", l.Fence, high)
	}
	// A seed of a slot first used after the purge lowers nothing either
	// (see driver.SlotSeeder): its fence stays above the purged ones.
	if has[driver.SlotSeeder](st) {
		sns := e.namespace("purge-fence-seed", 1)
		e.fatalIf(st.Slots().Seed(e.ctx, sns, 0, 1, 0), "Seed(fence 1) of a slot never used, after a purge")
		if l := e.acquire(st, sns, "a", e.long()); l.Fence <= high {
			e.t.Errorf("the first term of a slot seeded at fence 1 after a purge has fence %d, not above %d from before "+
				"(see driver.SlotSeeder: nothing is ever lowered; driver.Purger: fences never repeat)", l.Fence, high)
		}
	}
}

// checkPurgeSlotFloor: a driver that keeps a slot timestamp floor across
// purges (driver.Purger) starts a slot first used after the purge at the
// next floor the purged slot would have given; one that keeps none starts
// it at 0, as a slot never used. Either way the suite must say which
// (Suite.PurgeKeepsSlotFloor): Explore's model holds the driver to it
// exactly, and a suite that says the wrong one fails here, in every run,
// rather than in the rare random history that purges a released slot.
func checkPurgeSlotFloor(e *env) {
	st := e.open()
	needDriver[driver.Purger](e, st)
	ns := e.namespace("purge-floor", 1)
	// And a term never released, expired, its ceiling passed: the next
	// term of the slot would have started at that ceiling
	// (SlotRecord.NewTerm), so a floor kept across the purge is there too.
	ns2 := e.namespace("purge-floor-expired", 1)
	l2 := e.acquire(st, ns2, "b", store.AcquireOptions{TTL: e.ttl})
	l := e.acquire(st, ns, "a", e.long())
	// Used up to just before the term began: the next floor, the term's
	// start, is not ahead of the store's clock, which would stop the purge.
	began := l.ExpiresAt - l.TTL.Milliseconds()
	used := max(began-1, l.Floor)
	e.fatalIf(st.Slots().ReleaseUsed(e.ctx, l, used), "ReleaseUsed")
	next := max(used+1, l.Floor)
	e.waitUntil(l2.Ceiling + 1)
	var err error
	e.eventually(e.prompt, func() bool { // the store's clock may lag the local one a little
		_, err = st.Purge(e.ctx)
		return !errors.Is(err, store.ErrLocked)
	})
	e.fatalIf(err, "Purge")
	after := e.acquire(e.open(), ns, "a", e.long())
	after2 := e.acquire(e.open(), ns2, "b", e.long())
	switch {
	case e.suite.PurgeKeepsSlotFloor && after2.Floor < l2.Ceiling:
		e.t.Errorf("the first term after a purge starts at floor %d, below %d, the ceiling of a term the purge deleted "+
			"unreleased: the suite says the driver keeps a slot timestamp floor across purges (see driver.Purger: "+
			"an unreleased term's ceiling)", after2.Floor, l2.Ceiling)
	case !e.suite.PurgeKeepsSlotFloor && after2.Floor != 0:
		e.t.Errorf("slot 0 of %s's first term after a purge starts at floor %d, not 0 as a slot never used", ns2.Name, after2.Floor)
	}
	switch {
	case e.suite.PurgeKeepsSlotFloor && after.Floor < next:
		e.t.Errorf("slot 0's first term after a purge starts at floor %d, below %d, the next floor of the term the purge "+
			"deleted: the suite says the driver keeps a slot timestamp floor across purges (see driver.Purger)", after.Floor, next)
	case !e.suite.PurgeKeepsSlotFloor && after.Floor != 0:
		e.t.Errorf("slot 0's first term after a purge starts at floor %d, not 0 as a slot never used: if the driver keeps a "+
			"slot timestamp floor across purges (see driver.Purger), its suite must say so (Suite.PurgeKeepsSlotFloor)", after.Floor)
	}
}

// checkHistoryListed: what Slots shows of a slot's history, where drivers
// could otherwise differ: during a term its next floor is the term's floor;
// a takeover makes the old holder the last owner; a release makes the
// releasing owner the last owner.
func checkHistoryListed(e *env) {
	a, b := e.open(), e.open()
	ns := e.namespace("history-listed", 1)
	la := e.acquire(a, ns, "a", store.AcquireOptions{TTL: e.ttl})
	if in, _ := e.slotInfo(a, ns.Name, 0); in.Owner != "a" || in.NextFloor != la.Floor || in.LastOwner != "" {
		e.t.Errorf("during the first term Slots lists owner %q, last owner %q, next floor %d; want a, none, the floor %d",
			in.Owner, in.LastOwner, in.NextFloor, la.Floor)
	}
	e.waitUntil(la.ExpiresAt)
	var lb store.Lease
	var err error
	took := e.eventually(e.prompt, func() bool {
		lb, err = e.tryAcquire(b, ns, "b", e.long())
		return !errors.Is(err, store.ErrExhausted)
	})
	if !took || err != nil {
		e.t.Fatalf("owner b could not take slot 0 after its term expired at %d: %v", la.ExpiresAt, err)
	}
	if in, _ := e.slotInfo(a, ns.Name, 0); in.Owner != "b" || in.LastOwner != "a" || in.NextFloor != lb.Floor {
		e.t.Errorf("after b took over a's expired term Slots lists owner %q, last owner %q, next floor %d; want b, a, the floor %d",
			in.Owner, in.LastOwner, in.NextFloor, lb.Floor)
	}
	e.fatalIf(b.Slots().Release(e.ctx, lb), "Release")
	if in, _ := e.slotInfo(a, ns.Name, 0); in.Owner != "" || in.LastOwner != "b" {
		e.t.Errorf("after b's release Slots lists owner %q, last owner %q; want none, b", in.Owner, in.LastOwner)
	}
}

// checkFenceAtMax: a slot whose fence reached math.MaxInt64 (a seed) is
// never taken: its next fence would wrap. Acquire passes over it and,
// with no other slot, gives ErrExhausted.
func checkFenceAtMax(e *env) {
	st := e.open()
	needDriver[driver.SlotSeeder](e, st)
	ns := e.namespace("fence-max", 1)
	e.fatalIf(st.Slots().Seed(e.ctx, ns, 0, math.MaxInt64, 0), "Seed(fence MaxInt64)")
	l, err := st.Slots().Acquire(e.ctx, ns, "a", e.long())
	e.wantIs(err, store.ErrExhausted, "Acquire of a namespace whose one slot has fence MaxInt64 (got fence %d; "+
		"see driver.SlotLeaseStore.Acquire: a slot whose fence is math.MaxInt64 is passed over)", l.Fence)
	// Named: by its number or path, with the fence that cannot grow.
	if err != nil && !strings.Contains(err.Error(), "9223372036854775807") {
		e.t.Errorf("Acquire passing over slot 0 (fence MaxInt64) says %q; the contract (driver.SlotLeaseStore.Acquire) "+
			"wants a slot passed over named in the ErrExhausted error, with why", err)
	}
	// Named too beside a slot that is only held: the slot passed over is
	// why a namespace with no live term left to expire stays full.
	two := e.namespace("fence-max-two", 2)
	e.fatalIf(st.Slots().Seed(e.ctx, two, 1, math.MaxInt64, 0), "Seed(slot 1, fence MaxInt64)")
	held := e.acquire(st, two, "a", e.long())
	e.wantSlot(held, 0, "the one slot whose fence can grow")
	_, err = st.Slots().Acquire(e.ctx, two, "b", e.long())
	e.wantIs(err, store.ErrExhausted, "Acquire of a namespace with slot 0 held and slot 1 at fence MaxInt64")
	if err != nil && !strings.Contains(err.Error(), "9223372036854775807") {
		e.t.Errorf("Acquire passing over slot 1 (fence MaxInt64) beside a held slot 0 says %q; the contract "+
			"(driver.SlotLeaseStore.Acquire) wants a slot passed over named in the ErrExhausted error, with why", err)
	}
	// Purged, the fences leave a floor at MaxInt64 (driver.Purger): every
	// slot of a namespace made since is passed over, and the Acquire that
	// made it ends ErrExhausted having created it all the same.
	if !has[driver.Purger](st) {
		return
	}
	e.fatalIf(st.Slots().ReleaseUsed(e.ctx, held, held.Floor), "ReleaseUsed") // no next floor ahead to stop the purge
	_, err = st.Purge(e.ctx)
	e.fatalIf(err, "Purge")
	fresh := e.namespace("fence-max-new", 2)
	_, err = e.open().Slots().Acquire(e.ctx, fresh, "a", e.long())
	e.wantIs(err, store.ErrExhausted, "Acquire in a new namespace after a purge of fences at MaxInt64")
	spaces, err := st.Slots().Namespaces(e.ctx)
	e.fatalIf(err, "Namespaces")
	want := []store.Namespace{fresh}
	if !slices.Equal(spaces, want) {
		e.t.Errorf("after an Acquire that created namespace %q and ended ErrExhausted, Namespaces lists %+v, want %+v "+
			"(see driver.SlotLeaseStore.Acquire: the namespace a missing one gets is kept whatever the Acquire ends in)",
			fresh.Name, spaces, want)
	}
}
