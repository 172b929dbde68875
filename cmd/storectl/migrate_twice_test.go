package main

import (
	"testing"
	"time"

	"github.com/cosid-go/store"
)

// TestMigrateTwiceFromOneSource: a source migrated to B, then (B in use)
// migrated again to C, for instance everything after a first move with
// --key, or to the right target after one with a mistyped path. The second
// run finds each key and namespace already sealed in the source, takes that
// for a rerun after a failure, and starts C where B started: B and C then
// hand out the same values, slot 0 of B and of C the same worker ID over
// the same milliseconds, and B and C grant one lock name at once. Wanted:
// a key, namespace or lock set already moved to another store is refused
// (a rerun goes to the same target only).
func TestMigrateTwiceFromOneSource(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		src, b, c := be.fresh(t), be.fresh(t), be.fresh(t)
		h := &handedOut{ranges: map[string][]store.Range{}}
		h.next(t, src.open(t), "orders", 10)
		l := acquire(t, src.open(t), workers, "host-a", 0, time.Minute)
		if err := src.open(t).Slots().ReleaseUsed(t.Context(), l, l.Floor); err != nil {
			t.Fatal(err)
		}
		migrate(src, b).want(t, exitOK, "key orders: sealed in source at 10")
		for range 3 {
			h.next(t, b.open(t), "orders", 10)
		}
		lb := acquire(t, b.open(t), workers, "host-b", 0, time.Minute)

		r := migrate(src, c)
		if r.code == exitOK {
			for range 3 {
				h.next(t, c.open(t), "orders", 10)
			}
			lc := acquire(t, c.open(t), workers, "host-c", 0, time.Minute)
			hb, errb := b.open(t).Locks().TryLock(t.Context(), "jobs")
			hc, errc := c.open(t).Locks().TryLock(t.Context(), "jobs")
			if errb == nil && errc == nil {
				t.Errorf("lock jobs held in B (fence %d) and in C (fence %d) at once", hb.Fence(), hc.Fence())
			}
			dups := int64(0)
			for _, rb := range h.ranges["orders"][1:4] {
				for _, rc := range h.ranges["orders"][4:] {
					dups += max(0, min(rb.End, rc.End)-max(rb.Start, rc.Start))
				}
			}
			t.Errorf("second migrate of a moved source exited 0; %d values of orders handed out by both B and C", dups)
			if lb.Floor < lc.Ceiling && lc.Floor < lb.Ceiling {
				t.Errorf("slot 0 leased in B (fence %d, [%d, %d)) and in C (fence %d, [%d, %d)) at once: %d ms of one worker ID twice",
					lb.Fence, lb.Floor, lb.Ceiling, lc.Fence, lc.Floor, lc.Ceiling, min(lb.Ceiling, lc.Ceiling)-max(lb.Floor, lc.Floor))
			}
			return
		}
		r.want(t, exitRefused, "orders")
	})
}
