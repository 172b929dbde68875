package tck

import (
	"errors"

	"github.com/google/go-cmp/cmp"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// checkSlotSeal: a sealed namespace (driver.SlotLeaseStore.SealNamespace).
// From every store: Acquire gives ErrSealed (a new owner, the owner of a
// live term, other settings), Renew gives ErrSealed and leaves the term's
// times as they were, Release still works and records the used value;
// the listing shows the namespace Sealed and another namespace unsealed;
// sealing again is not an error; a missing namespace is created sealed;
// SeedSlot gives ErrSealed; Purge refuses, and the seal stays.
func checkSlotSeal(e *env) {
	a, b := e.open(), e.open()
	ns, other := e.namespace("sealed", 3), e.namespace("unsealed", 3)
	la := e.acquire(a, ns, "a", e.long())
	lb := e.acquire(b, ns, "b", e.long())
	lo := e.acquire(a, other, "a", e.long())
	infoA, _ := e.slotInfo(b, ns.Name, la.Slot)

	e.fatalIf(a.Slots().Seal(e.ctx, ns.Name), "Seal(%q)", ns.Name)
	e.fatalIf(b.Slots().Seal(e.ctx, ns.Name), "Seal(%q) again, from another store", ns.Name)
	for i, st := range []*store.Store{a, b} {
		_, err := st.Slots().Acquire(e.ctx, ns, "c", e.long())
		e.wantIs(err, store.ErrSealed, "store %d: Acquire by a new owner in a sealed namespace", i+1)
		_, err = st.Slots().Acquire(e.ctx, e.namespace(ns.Name, 5), "c", e.long())
		e.wantIs(err, store.ErrSealed, "store %d: Acquire with other settings in a sealed namespace", i+1)
	}
	_, err := a.Slots().Acquire(e.ctx, ns, "a", e.long())
	e.wantIs(err, store.ErrSealed, "Acquire by the owner of a live term (same incarnation) in a sealed namespace")
	_, err = b.Slots().Acquire(e.ctx, ns, "b", store.AcquireOptions{TTL: e.longTTL, Reclaim: true})
	e.wantIs(err, store.ErrSealed, "Acquire with Reclaim in a sealed namespace")

	_, err = a.Slots().Renew(e.ctx, la)
	e.wantIs(err, store.ErrSealed, "Renew of a live term in a sealed namespace")
	_, err = b.Slots().Renew(e.ctx, la)
	e.wantIs(err, store.ErrSealed, "Renew of a live term in a sealed namespace, from another store")
	if got, _ := e.slotInfo(b, ns.Name, la.Slot); got != infoA {
		e.t.Errorf("slot %d changed after the seal, which a refused Renew must not do: -before +after:\n%s",
			la.Slot, cmp.Diff(infoA, got))
	}
	e.renew(a, lo) // another namespace is not sealed

	// Release works: the used value is recorded for the next store.
	e.fatalIf(b.Slots().ReleaseUsed(e.ctx, lb, lb.Floor), "ReleaseUsed in a sealed namespace")
	e.wantReleased(a, ns.Name, lb.Slot, lb.Floor+1, "released with used = floor in a sealed namespace")
	e.fatalIf(a.Slots().Release(e.ctx, la), "Release in a sealed namespace")
	e.wantReleased(b, ns.Name, la.Slot, la.Ceiling, "released without a used value in a sealed namespace")

	// A missing namespace is created sealed, with no settings.
	e.fatalIf(b.Slots().Seal(e.ctx, "sealed-new"), "Seal of a missing namespace")
	_, err = a.Slots().Acquire(e.ctx, e.namespace("sealed-new", 2), "a", e.long())
	e.wantIs(err, store.ErrSealed, "Acquire in a namespace that Seal created")
	infos, err := a.Slots().List(e.ctx, "sealed-new")
	e.fatalIf(err, "Slots of a namespace that Seal created")
	e.wantEmpty("Slots of a namespace that Seal created", infos)
	if has[driver.SlotSeeder](a) {
		e.wantIs(a.Slots().Seed(e.ctx, ns, 2, 5, 5), store.ErrSealed, "Seed in a sealed namespace")
	}

	sealed := ns
	sealed.Sealed = true
	want := []store.Namespace{sealed, {Name: "sealed-new", Sealed: true}, other}
	for i, st := range []*store.Store{a, b} {
		nss, err := st.Slots().Namespaces(e.ctx)
		e.fatalIf(err, "Namespaces")
		if diff := cmp.Diff(want, nss); diff != "" {
			e.t.Errorf("store %d: Namespaces after Seal: -want +got:\n%s", i+1, diff)
		}
	}

	if !has[driver.Purger](a) {
		return
	}
	// A purge never forgets a seal (see driver.Purger): it refuses (la's
	// next floor, its ceiling, may still be ahead: ErrLocked comes first),
	// and the namespace stays sealed.
	e.releaseUsed(a, lo)
	deleted, err := a.Purge(e.ctx)
	if !errors.Is(err, store.ErrSealed) && !errors.Is(err, store.ErrLocked) {
		e.t.Errorf("Purge of a store with sealed namespaces: %v (deleted %q), want ErrSealed (or ErrLocked)", err, deleted)
	}
	_, err = b.Slots().Acquire(e.ctx, ns, "c", e.long())
	e.wantIs(err, store.ErrSealed, "Acquire in a sealed namespace after a refused purge")
}
