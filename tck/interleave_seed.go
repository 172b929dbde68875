package tck

// The Interleave checks of the optional driver.SlotSeeder and
// driver.Purger (see interleave.go).

import (
	"errors"
	"fmt"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// checkInterleaveSeedAcquire: a Seed of a slot never used (fence 50, a
// next floor an hour ahead) races an Acquire of it. The Seed comes first
// (the term starts above both) or finds the term live (ErrLocked, the
// term at fence 1).
func checkInterleaveSeedAcquire(e *env) {
	a, b := e.open(), e.open()
	needDriver[driver.SlotSeeder](e, b)
	e.interleave(func(i int, at func(f, g func())) string {
		ns := e.namespace(fmt.Sprintf("il-seed-%d", i), 1)
		floor := nowMillis() + time.Hour.Milliseconds()
		var l store.Lease
		var aerr, serr error
		at(func() { l, aerr = a.Slots().Acquire(e.ctx, ns, "a", e.long()) }, func() { serr = b.Slots().Seed(e.ctx, ns, 0, 50, floor) })
		e.fatalIf(aerr, "Acquire racing a Seed")
		switch {
		case serr == nil:
			if l.Fence != 51 || l.Floor < floor {
				e.t.Errorf("an Acquire racing a Seed (fence 50, next floor %d) that succeeded got fence %d, floor %d: the Seed was lost", floor, l.Fence, l.Floor)
			}
			return "seed first"
		case errors.Is(serr, store.ErrLocked):
			if l.Fence != 1 {
				e.t.Errorf("a Seed refused for a live term, yet the term has fence %d, not 1", l.Fence)
			}
			return "acquire first"
		default:
			e.t.Fatalf("Seed racing an Acquire: %v", serr)
			return ""
		}
	})
}

// checkInterleaveSeedRenew: once a term has expired, its holder's Renew
// races a Seed of its slot. The Renew continues the term (the Seed then
// gives ErrLocked, or ends the renewed term once it expired too) or the
// Seed ends it (the Renew then gives ErrLeaseLost).
func checkInterleaveSeedRenew(e *env) {
	a, b := e.open(), e.open()
	needDriver[driver.SlotSeeder](e, b)
	e.interleave(func(i int, at func(f, g func())) string {
		ns := e.namespace(fmt.Sprintf("il-seed-renew-%d", i), 1)
		l := e.acquire(a, ns, "a", store.AcquireOptions{TTL: e.ttl})
		e.waitUntil(l.ExpiresAt + 1)
		var renewed store.Lease
		var rerr, serr error
		at(func() { renewed, rerr = a.Slots().Renew(e.ctx, l) }, func() { serr = b.Slots().Seed(e.ctx, ns, 0, l.Fence+10, l.Ceiling) })
		switch {
		case rerr == nil && serr == nil:
			// Both may succeed only in that order, the Seed after the
			// renewed term expired too: it ends that term, and the next
			// one starts above its ceiling.
			if in, ok := e.slotInfo(b, ns.Name, 0); !ok || in.Owner != "" || in.Fence < l.Fence+10 || in.NextFloor < renewed.Ceiling {
				e.t.Errorf("an expired term's Renew (ceiling %d) and a Seed of its slot (fence %d) both succeeded, and the slot lists %+v: "+
					"one wrote over the other", renewed.Ceiling, l.Fence+10, in)
			}
			return "renew first, seed after its expiry"
		case rerr == nil && errors.Is(serr, store.ErrLocked):
			return "renew first"
		case serr == nil && errors.Is(rerr, store.ErrLeaseLost):
			return "seed first"
		default:
			e.t.Fatalf("Renew racing a Seed: %v; Seed: %v", rerr, serr)
			return ""
		}
	})
}

// purgeOrder names the order a Purge's outcome shows: first (it
// succeeded), after the other call (ErrLocked: it found the term or hold),
// or refused otherwise (a write it saw change under it: ZooKeeper's
// versioned deletes).
func purgeOrder(err error, after string) string {
	switch {
	case err == nil:
		return "purge first"
	case errors.Is(err, store.ErrLocked):
		return after
	default:
		return "purge refused (not ErrLocked)"
	}
}

// checkInterleavePurgeAcquire: a Purge races an Acquire. The Purge comes
// first (the term is made after it), or finds the term live (ErrLocked),
// or fails; the Acquire may fail too: a term that was granted survives
// the purge, and renews.
func checkInterleavePurgeAcquire(e *env) {
	a, b := e.open(), e.open()
	needDriver[driver.Purger](e, b)
	e.interleave(func(i int, at func(f, g func())) string {
		ns := e.namespace(fmt.Sprintf("il-purge-%d", i), 1)
		var l store.Lease
		var aerr, perr error
		at(func() { l, aerr = a.Slots().Acquire(e.ctx, ns, "a", e.long()) }, func() { _, perr = b.Purge(e.ctx) })
		order := purgeOrder(perr, "acquire first")
		if aerr != nil {
			// A purge is run with every instance stopped; one that meets
			// a running Acquire may make it fail (not hand out a term).
			e.t.Logf("round %d: Acquire racing a Purge (%s) failed: %v", i, order, aerr)
			return order + ", acquire failed"
		}
		renewed, err := a.Slots().Renew(e.ctx, l)
		if err != nil {
			e.t.Errorf("a term granted while a Purge ran (%s) does not renew: %v: the purge deleted a live term", order, err)
			return order
		}
		e.releaseUsed(a, renewed) // a next floor ahead would refuse the next rounds' purges
		return order
	})
}

// checkInterleavePurgeLock: a Purge races a Lock. The Purge comes first,
// or finds the lock held (ErrLocked), or fails; the hold granted survives
// it: a third store's TryLock finds the lock taken.
func checkInterleavePurgeLock(e *env) {
	a, b, c := e.open(), e.open(), e.open()
	needDriver[driver.Purger](e, b)
	e.interleave(func(i int, at func(f, g func())) string {
		name := fmt.Sprintf("il-purge-%d", i)
		var l *store.Lock
		var lerr, perr error
		at(func() { l, lerr = a.Locks().Lock(e.timeout(e.lockWait), name) }, func() { _, perr = b.Purge(e.ctx) })
		order := purgeOrder(perr, "lock first")
		if lerr != nil {
			e.t.Logf("round %d: Lock racing a Purge (%s) failed: %v", i, order, lerr)
			return order + ", lock failed"
		}
		if other, err := c.Locks().TryLock(e.ctx, name); !errors.Is(err, store.ErrLocked) {
			e.t.Errorf("a lock granted while a Purge ran (%s): another store's TryLock gave %v, want ErrLocked: the purge deleted a hold", order, err)
			if err == nil {
				e.unlock(other)
			}
		}
		e.unlock(l)
		return order
	})
}
