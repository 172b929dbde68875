package tck

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// checkPurgeLiveLease: a purge run by mistake while a lease is live
// deletes nothing and gives ErrLocked naming the slot (as namespace/slot):
// the holder may still issue timestamps up to its ceiling, and a slot
// forgotten would give its next term floor 0, below them. The lease renews
// afterwards and the store's keys are still there. After a Release the
// purge goes through; so it does once the store's clock has passed an
// unreleased term's ceiling (not merely its expiry): exactly, with the
// harness's ClockSetter, else by waiting.
func checkPurgeLiveLease(e *env) {
	a := e.open()
	needDriver[driver.Purger](e, a)
	ns := e.namespace("purge-live", 2)
	l := e.acquire(a, ns, "a", e.long())
	var before store.Range
	if e.suite.Ranges {
		before = e.next(a, "purge-live", 1)
	}
	op := e.open()
	deleted, err := op.Purge(e.ctx)
	e.wantIs(err, store.ErrLocked, "Purge while slot %s/%d has a live term (deleted %q)", ns.Name, l.Slot, deleted)
	if slot := fmt.Sprintf("%s/%d", ns.Name, l.Slot); err != nil && !strings.Contains(err.Error(), slot) {
		e.t.Errorf("Purge's refusal %q does not name the slot as %s", err, slot)
	}
	if len(deleted) != 0 {
		e.t.Errorf("the refused purge reports deleting %q, want nothing", deleted)
	}
	renewed, err := a.Slots().Renew(e.ctx, l)
	e.fatalIf(err, "Renew after a refused purge (the purge must not touch a live term)")
	if in, ok := e.slotInfo(op, ns.Name, l.Slot); !ok || in.Owner != "a" || in.Fence != l.Fence {
		e.t.Errorf("after a refused purge slot %d lists owner %q fence %d, want a's term of fence %d", l.Slot, in.Owner, in.Fence, l.Fence)
	}
	if e.suite.Ranges {
		if got := e.next(op, "purge-live", 1); got.Start < before.End {
			e.t.Errorf("after a refused purge Next gave %v, after %v: the purge deleted the key", got, before)
		}
	}
	e.releaseUsed(a, renewed)
	_, err = op.Purge(e.ctx)
	e.fatalIf(err, "Purge once the lease is released")

	// An unreleased term frees the slot only at its ceiling.
	ns = e.namespace("purge-expired", 1)
	if cs, ok := e.h.(ClockSetter); ok {
		l = e.acquire(a, ns, "a", e.long())
		for _, at := range []int64{l.ExpiresAt, l.Ceiling - 1} {
			e.fatalIf(cs.SetClock(e.ctx, time.UnixMilli(at)), "SetClock")
			_, err = op.Purge(e.ctx)
			e.wantIs(err, store.ErrLocked, "Purge at %d, past the term's expiry %d but before its ceiling %d", at, l.ExpiresAt, l.Ceiling)
		}
		e.fatalIf(cs.SetClock(e.ctx, time.UnixMilli(l.Ceiling)), "SetClock")
		_, err = op.Purge(e.ctx)
		e.fatalIf(err, "Purge at the ceiling %d of the only, unreleased, term", l.Ceiling)
		return
	}
	l = e.acquire(a, ns, "a", store.AcquireOptions{TTL: e.ttl})
	e.waitUntil(l.Ceiling)
	// The store's clock may lag the local one a little.
	if !e.eventually(e.prompt+time.Duration(e.slack)*time.Millisecond, func() bool {
		_, err = op.Purge(e.ctx)
		return err == nil
	}) {
		e.t.Fatalf("Purge still fails after the ceiling %d of the only, unreleased, term: %v", l.Ceiling, err)
	}
}

// issuingSlots are the slots whose term, not released, may still issue at
// the model's now, or whose next floor is ahead of it (see driver.Purger),
// as namespace/slot.
func (m *model) issuingSlots() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(m.spaces)) {
		sp := m.spaces[name]
		for _, n := range slices.Sorted(maps.Keys(sp.slots)) {
			if s := sp.slots[n]; s.owner != "" && m.now < s.ceiling || s.owner == "" && m.now < s.nextFloor {
				out = append(out, fmt.Sprintf("%s/%d", name, n))
			}
		}
	}
	return out
}

// sealedKeys are the model's sealed keys, which a purge refuses to forget
// (see driver.Purger).
func (m *model) sealedKeys() []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m.keys)) {
		if m.keys[k].sealed {
			out = append(out, k)
		}
	}
	return out
}
