package tck

import (
	"context"
	"errors"

	"github.com/cosid-go/store"
)

// NamespaceDeleter is an optional Harness capability: an operator
// deleting a namespace's own record by hand (its settings and its seal)
// with the backend's own client, its slots' records left, stores still
// open and unaware. An error wrapping store.ErrUnsupported says why the
// backend has no such action (a ZooKeeper node with children cannot be
// deleted alone); the check skips with it.
type NamespaceDeleter interface {
	DeleteNamespace(ctx context.Context, ns string) error
}

// checkDeletedNamespace: a sealed namespace whose record an operator
// deleted, its slots' records left, is not created again unsealed: an
// Acquire from the store that saw the seal and from one that never did
// is refused (ErrCorrupt, ErrSealed, ErrRecreated), never a new term in a
// namespace that moved to another store (driver.SlotLeaseStore.SealNamespace),
// and a live term of it is not renewed.
func checkDeletedNamespace(e *env) {
	nd := harnessPart[NamespaceDeleter](e, "deletes a namespace's record by hand under running stores")
	a := e.open()
	ns := e.namespace("deleted-ns", 3)
	e.fatalIf(a.Slots().Release(e.ctx, e.acquire(a, ns, "a", e.long())), "Release")
	live := e.acquire(a, ns, "live", e.long()) // a term the seal stops from growing
	e.fatalIf(a.Slots().Seal(e.ctx, ns.Name), "Seal(%q)", ns.Name)
	err := nd.DeleteNamespace(e.ctx, ns.Name)
	e.operatorUnsupported(err, "delete a namespace's record by hand")
	e.fatalIf(err, "Harness.DeleteNamespace(%q)", ns.Name)
	// Its live term is not renewed, by a store that never saw the seal
	// either: no seal to check, the term cannot tell it may still grow
	// (driver.SlotLeaseStore.Renew).
	for i, st := range []*store.Store{e.open(), a} {
		who := [...]string{"a store that never saw the seal", "the store that sealed it"}[i]
		if r, err := st.Slots().Renew(e.ctx, live); err == nil {
			e.t.Errorf("Renew by %s of a term of sealed namespace %s, whose record was deleted by hand, succeeded (ceiling %d to %d): "+
				"the seal went with the record; want ErrLeaseLost, ErrSealed or ErrCorrupt", who, ns.Name, live.Ceiling, r.Ceiling)
		} else if !wentBackErr(err) && !errors.Is(err, store.ErrSealed) && !errors.Is(err, store.ErrLeaseLost) {
			e.t.Errorf("Renew by %s of a term of sealed namespace %s, whose record was deleted by hand: %v; "+
				"want ErrLeaseLost, ErrSealed or ErrCorrupt", who, ns.Name, err)
		}
	}
	for i, st := range []*store.Store{a, e.open()} {
		who := [...]string{"the store that sealed it", "a store that never read it"}[i]
		l, err := st.Slots().Acquire(e.ctx, ns, "b", e.long())
		switch {
		case err == nil:
			e.t.Errorf("Acquire by %s in sealed namespace %s, whose record was deleted by hand beside its slots, started a term "+
				"(slot %d, fence %d): the namespace was created again unsealed; want ErrCorrupt or ErrSealed", who, ns.Name, l.Slot, l.Fence)
		case wentBackErr(err) || errors.Is(err, store.ErrSealed):
			e.t.Logf("Acquire by %s: %v", who, err)
		default:
			e.t.Errorf("Acquire by %s in sealed namespace %s, whose record was deleted by hand: %v; want ErrCorrupt or ErrSealed", who, ns.Name, err)
		}
	}
}
