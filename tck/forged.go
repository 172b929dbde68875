package tck

import (
	"math"
	"time"

	"github.com/cosid-go/store"
)

// checkForgedLease: a lease is judged by what the store keeps. A lease of
// the slot's live term whose times or bounds were changed after the store
// returned it (a time in microseconds, MaxInt64 fields, a ceiling moved up,
// another ttl or floor) is refused by Renew, Release and ReleaseUsed with
// ErrInvalidArgument, and the slot is unchanged: the listing shows the same
// term, the real lease still renews and releases (also the first lease
// given the latest renewal's times), and the next term starts at the stored
// ceiling, not at anything a forged lease said.
func checkForgedLease(e *env) {
	st := e.open()
	s := st.Slots()
	ns := e.namespace("forged", 2)
	l := e.acquire(st, ns, "owner", e.long())
	before, ok := e.slotInfo(st, ns.Name, l.Slot)
	if !ok {
		e.t.Fatalf("Slots does not list slot %d after Acquire", l.Slot)
	}
	forged := []struct {
		name  string
		spoil func(*store.Lease)
	}{
		{"ExpiresAt in microseconds", func(f *store.Lease) { f.ExpiresAt *= 1000 }},
		{"Ceiling in microseconds", func(f *store.Lease) { f.Ceiling *= 1000 }},
		{"ExpiresAt and Ceiling MaxInt64", func(f *store.Lease) { f.ExpiresAt, f.Ceiling = math.MaxInt64, math.MaxInt64 }},
		{"every time MaxInt64", func(f *store.Lease) { f.Floor, f.ExpiresAt, f.Ceiling = math.MaxInt64, math.MaxInt64, math.MaxInt64 }},
		{"Ceiling moved up an hour", func(f *store.Lease) { f.Ceiling += time.Hour.Milliseconds() }},
		{"Ceiling below Floor", func(f *store.Lease) { f.Ceiling = f.Floor - 1 }},
		{"Floor moved up", func(f *store.Lease) { f.Floor += 1000 }},
		{"TTL of a day", func(f *store.Lease) { f.TTL = store.MaxTTL }},
		{"Tolerance changed", func(f *store.Lease) { f.Tolerance += time.Second }},
	}
	rebuilt := func(l store.Lease) store.Lease { // from the exported fields: no driver state
		return store.Lease{Namespace: l.Namespace, Slot: l.Slot, Owner: l.Owner, Incarnation: l.Incarnation, Fence: l.Fence,
			TTL: l.TTL, Tolerance: l.Tolerance, Floor: l.Floor, ExpiresAt: l.ExpiresAt, Ceiling: l.Ceiling}
	}
	for _, c := range forged {
		for _, from := range []struct {
			how string
			l   store.Lease
		}{{"returned", l}, {"rebuilt", rebuilt(l)}} {
			f := from.l
			c.spoil(&f)
			_, err := s.Renew(e.ctx, f)
			e.wantIs(err, store.ErrInvalidArgument, "Renew of a %s lease with %s", from.how, c.name)
			e.wantIs(s.Release(e.ctx, f), store.ErrInvalidArgument, "Release of a %s lease with %s", from.how, c.name)
			e.wantIs(s.ReleaseUsed(e.ctx, f, f.Floor), store.ErrInvalidArgument, "ReleaseUsed of a %s lease with %s", from.how, c.name)
		}
	}
	if after, ok := e.slotInfo(st, ns.Name, l.Slot); !ok || after != before {
		e.t.Errorf("forged leases changed slot %d: before %+v, after %+v", l.Slot, before, after)
	}
	// The real lease still holds the term, rebuilt too; so does the first
	// lease given the times of the latest renewal (they are the term's,
	// whatever driver state the lease carries). The next term starts at the
	// stored ceiling.
	r := e.renew(st, rebuilt(l))
	mixed := l
	mixed.ExpiresAt, mixed.Ceiling = r.ExpiresAt, r.Ceiling
	r = e.renew(st, mixed)
	e.fatalIf(s.Release(e.ctx, r), "Release of the renewed lease")
	e.wantReleased(st, ns.Name, l.Slot, r.Ceiling, "release of the real lease: its stored ceiling")
	next := e.acquire(st, ns, "owner", e.long())
	e.wantFloor(next, r.Ceiling, "the stored ceiling of the released term")

	// At the low edge: a copy whose times are all 0, of a first term (floor
	// 0) in a namespace of tolerance 0, is below the term's times and not
	// below its own floor or ExpiresAt + Tolerance: it renews.
	ns0 := store.Namespace{Name: "forged-0", Limit: 1}
	zero := e.acquire(st, ns0, "owner", e.long())
	zero.ExpiresAt, zero.Ceiling = 0, 0
	_, err := s.Renew(e.ctx, zero)
	e.fatalIf(err, "Renew of a lease copy with ExpiresAt and Ceiling 0 of a term of floor 0 and tolerance 0 "+
		"(see driver.SlotLeaseStore.Renew: an older copy has lower times, and is fine)")
}
