//go:build holes

package etcd

import (
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
)

// TestPurgeLiveSlotTerm (hole, left for the contract to decide): Purge
// deletes a slot record whose term is live (the contract refuses only for
// locks, and the TCK's model purges with live terms). The next Acquire of
// the slot starts a term at floor 0 while the old holder may still issue
// timestamps up to its ceiling: two live terms of one slot with
// overlapping timestamp ranges. Refusing while a term is live (now below
// its ceiling) would close it, in every driver, and change the TCK's
// model.
func TestPurgeLiveSlotTerm(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("purge-live")
	a := openShifted(t, prefix, 0)
	b := openShifted(t, prefix, 0)
	ns := driver.Namespace{Name: "n", Limit: 1, Tolerance: time.Second}
	l, err := a.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "a1", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Purge(ctx); err != nil {
		t.Logf("Purge refused with a live term: %v", err)
		return
	}
	l2, err := b.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "b", Incarnation: "b1", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if l2.Floor < l.Ceiling && l.Floor < l2.Ceiling {
		t.Errorf("after a purge, live terms [%d,%d) (fence %d) and [%d,%d) (fence %d) of one slot overlap",
			l.Floor, l.Ceiling, l.Fence, l2.Floor, l2.Ceiling, l2.Fence)
	}
}
