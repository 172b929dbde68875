package zookeeper

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestSlotNodeDeletedUnderLiveTerm: an operator deletes the node of a slot
// whose term is live. A store that never saw the slot does not make it
// again at fence 1 and floor 0 (its create fails on the slot's marker,
// slot_made.go): the acquire passes over it and names it (ErrCorrupt), and
// so does the store that saw it. A seed refuses it too. The holder's Renew
// fails (ErrLeaseLost) and recreates nothing. Once the operator puts the
// node back, the slot is used again above it.
func TestSlotNodeDeletedUnderLiveTerm(t *testing.T) {
	onEachVersion(t, func(_ *zktest.Server) []serverCheck {
		return []serverCheck{{"Refused", testSlotNodeDeleted}}
	})
}

func testSlotNodeDeleted(t *testing.T, addr string) {
	opts := testOptions(addr, nil)
	a, b := openTest(t, opts, nil), openTest(t, opts, nil)
	ctx := t.Context()
	ns := driver.Namespace{Name: "deleted", Limit: 1, Tolerance: time.Second}
	l := mustAcquire(t, a, slotRequest(ns, "a", "1"))
	conn := rawConn(t, addr)
	path := a.slotPath(ns.Name, l.Slot)
	data, _, err := conn.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete(path, -1); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*driverStore{"another store": b, "the holder's store": a} {
		l2, err := s.Acquire(ctx, slotRequest(ns, "b", "1"))
		if err == nil {
			t.Fatalf("a slot node deleted under a live term (fence %d, ceiling %d): %s got it at fence %d, floor %d",
				l.Fence, l.Ceiling, name, l2.Fence, l2.Floor)
		}
		if !errors.Is(err, driver.ErrExhausted) || !errors.Is(err, driver.ErrCorrupt) {
			t.Errorf("Acquire by %s of the one slot, deleted by hand: %v; want ErrExhausted naming it (ErrCorrupt)", name, err)
		}
	}
	wantIs(t, b.SeedSlot(ctx, ns, l.Slot, 1, 0), driver.ErrCorrupt, "SeedSlot of a slot deleted by hand")
	_, err = a.Renew(ctx, l)
	wantIs(t, err, driver.ErrLeaseLost, "the deleted term's Renew")
	if ok, _, err := conn.Exists(path); err != nil || ok {
		t.Fatalf("after the refusals, %s exists: %v (err %v); nothing may recreate it", path, ok, err)
	}
	// The operator puts the node back (with its term: it is the operator's
	// to end); the holder's term stays lost, another owner waits for it.
	if _, err := conn.Create(path, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, slotRequest(ns, "b", "1")); !errors.Is(err, driver.ErrExhausted) || errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("Acquire with the slot put back under its live term: %v; want ErrExhausted (held), not ErrCorrupt", err)
	}
}
