package tck

import (
	"errors"
	"fmt"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// lastFreeLimit is the namespace size of checkLastFree: above what a driver
// is likely to read in its first batches from its search point (etcd's
// first reads cover 124 slots), so that the last slot in the search order
// is found only by the read of the rest.
const lastFreeLimit = 200

// checkLastFree: with every slot of a large namespace held but one, an
// Acquire finds that one wherever it lies in the search order: at the
// very end of the order from the acquirer's own point (driver.SearchStart),
// and the namespace's last slot (driver.SlotLeaseStore.Acquire: no free
// slot, ErrExhausted, only after every slot was judged).
func checkLastFree(e *env) {
	filler := e.open(store.WithTimeout(e.scaled(60 * time.Second)))
	st := e.open()
	ns := e.namespace("last-free", lastFreeLimit)
	held := make([]store.Lease, lastFreeLimit)
	for n := range lastFreeLimit {
		held[n] = e.acquire(filler, ns, fmt.Sprintf("fill-%d", n), store.AcquireOptions{TTL: e.longTTL, Preferred: new(n)})
		e.wantSlot(held[n], n, "the preferred slot, free")
	}
	// An owner whose search starts at 0 finds slot limit-1 last; one whose
	// search starts at 1 finds slot 0 last.
	for _, free := range []int{lastFreeLimit - 1, 0} {
		start := (free + 1) % lastFreeLimit
		owner := ""
		for i := 0; owner == ""; i++ {
			if o := fmt.Sprintf("last-%d", i); driver.SearchStart(o, st.Incarnation(), lastFreeLimit) == start {
				owner = o
			}
		}
		e.fatalIf(filler.Slots().Release(e.ctx, held[free]), "Release of slot %d", free)
		l, err := e.tryAcquire(st, ns, owner, e.long())
		if errors.Is(err, store.ErrExhausted) {
			e.t.Fatalf("Acquire by %s (search from slot %d) with only slot %d of %d free: %v; the contract "+
				"(driver.SlotLeaseStore.Acquire) gives ErrExhausted only after every slot was judged", owner, start, free, lastFreeLimit, err)
		}
		e.fatalIf(err, "Acquire by %s with only slot %d free", owner, free)
		e.wantSlot(l, free, "the only free slot")
		e.fatalIf(st.Slots().Release(e.ctx, l), "Release of slot %d", free)
		held[free] = e.acquire(filler, ns, fmt.Sprintf("fill-%d", free), store.AcquireOptions{TTL: e.longTTL, Preferred: new(free)})
	}
}
