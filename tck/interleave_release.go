package tck

import (
	"errors"
	"fmt"

	"github.com/cosid-go/store"
)

// checkInterleaveReleaseTakeover: after the expiry of a term, its holder's
// late Release races another owner's takeover of the slot. The Release
// comes first (it succeeds, and the takeover starts above its used
// timestamp) or the takeover does (the Release gives ErrLeaseLost); either
// way the slot ends holding the new term, never written over by the
// Release (a Release that reads the expired term and writes without a
// compare-and-set would end the new holder's term and put its fence back).
func checkInterleaveReleaseTakeover(e *env) {
	a, b := e.open(), e.open()
	e.interleave(func(i int, at func(f, g func())) string {
		ns := e.namespace(fmt.Sprintf("il-release-takeover-%d", i), 1)
		l := e.acquire(a, ns, "a", store.AcquireOptions{TTL: e.ttl})
		e.waitUntil(l.ExpiresAt + 1)
		used := l.Floor + 5
		var taken store.Lease
		var rerr, aerr error
		at(func() { rerr = a.Slots().ReleaseUsed(e.ctx, l, used) },
			func() { taken, aerr = b.Slots().Acquire(e.ctx, ns, "b", e.long()) })
		e.fatalIf(aerr, "Acquire of the slot of an expired term (fence %d) racing its Release", l.Fence)
		order := "release first"
		switch {
		case rerr == nil:
		case errors.Is(rerr, store.ErrLeaseLost):
			order = "takeover first"
		default:
			e.t.Fatalf("late Release of the expired term (fence %d) racing a takeover: %v; want nil or ErrLeaseLost", l.Fence, rerr)
		}
		if taken.Fence != l.Fence+1 || taken.Floor < used+1 {
			e.t.Errorf("takeover of %s's expired term (fence %d, used %d, %s) got fence %d, floor %d; want fence %d, floor above %d",
				ns.Name, l.Fence, used, order, taken.Fence, taken.Floor, l.Fence+1, used)
		}
		if in, ok := e.slotInfo(b, ns.Name, taken.Slot); !ok || in.Owner != "b" || in.Fence != taken.Fence {
			e.t.Errorf("after a late Release and a takeover (%s) slot %d of %s lists owner %q fence %d, want b's term at fence %d: "+
				"the Release wrote over the new term", order, taken.Slot, ns.Name, in.Owner, in.Fence, taken.Fence)
		}
		return order
	})
}
