//go:build holes

package etcd

import (
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
)

// TestSlotKeyDeletedUnderLiveTerm (a hole, left to a design decision): an
// operator deletes the key of a slot whose term is live; another store,
// which never saw the slot, then acquires it as a slot never used: fence 1
// again and floor 0, while the holder may issue timestamps up to its
// ceiling until its next renewal fails. Both then issue IDs with the same
// worker ID and timestamps. Catching it needs a record of the slot that
// outlives its key (a fence floor per namespace, raised with each term, or
// the namespace key's revision checked), which the driver does not keep;
// the ZooKeeper driver behaves the same on a deleted slot node. The store
// that saw the slot refuses it (TestSlotFenceWentBack).
func TestSlotKeyDeletedUnderLiveTerm(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("slotdel")
	a, b := openShifted(t, prefix, 0), openShifted(t, prefix, 0)
	ns := driver.Namespace{Name: "n", Limit: 1, Tolerance: time.Second}
	l, err := a.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "1", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rawClient(t).Delete(ctx, prefix+"/slot/n/0"); err != nil {
		t.Fatal(err)
	}
	l2, err := b.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "b", Incarnation: "1", TTL: time.Minute})
	if err == nil && (l2.Fence <= l.Fence || l2.Floor < l.Ceiling) {
		t.Errorf("a live term (fence %d, ceiling %d) whose key an operator deleted: another store got fence %d, floor %d",
			l.Fence, l.Ceiling, l2.Fence, l2.Floor)
	}
}
