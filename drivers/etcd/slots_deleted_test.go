package etcd

import (
	"errors"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
)

// TestSlotKeyDeletedUnderLiveTerm: an operator deletes the key of a slot
// whose term is live; another store, which never saw the slot, must not
// acquire it as a slot never used (fence 1 again and floor 0, while the
// holder may issue timestamps up to its ceiling: both would issue IDs with
// the same worker ID and timestamps). The namespace's slot tally
// (slot_tally.go) counts the slot keys created: one fewer is a hole, and
// the missing slot is passed over (ErrExhausted and ErrCorrupt, naming
// it) until the key is restored; the holder's Renew fails.
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
	} else if err != nil && !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("Acquire after a slot key was deleted by hand: %v; want ErrCorrupt", err)
	}
	if err := b.SeedSlot(ctx, ns, 0, 1, 0); !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("SeedSlot of the deleted slot: %v; want ErrCorrupt", err)
	}
	if _, err := a.Renew(ctx, l); !errors.Is(err, driver.ErrLeaseLost) {
		t.Errorf("Renew of the term whose key was deleted: %v; want ErrLeaseLost", err)
	}
}
