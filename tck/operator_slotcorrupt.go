package tck

import (
	"context"
	"errors"
	"fmt"

	"github.com/cosid-go/store"
)

// SlotCorrupter is an optional Harness capability: a slot's record written
// wrong under running stores (by hand, by a broken tool). CorruptSlot
// writes into slot's record, which holds a live term, the form-th wrong
// value (form 0, 1, ...) the driver's own format can hold (a stored
// expiry that does not follow from the term's fields), and reports false,
// writing nothing, when it has no form-th value. An error wrapping
// store.ErrUnsupported says why the backend cannot hold such a value; the
// check skips with it.
type SlotCorrupter interface {
	CorruptSlot(ctx context.Context, ns string, slot int, form int) (bool, error)
}

// checkCorruptSlot: a slot whose record was corrupted under its live term
// starts no new term and is passed over (driver.SlotLeaseStore.Acquire:
// its data is corrupt, so it is passed over and named in ErrExhausted),
// by the store that holds the term and by one that never read it: they
// take the namespace's other slot, and once that is held an Acquire gives
// ErrExhausted. The holder's Renew is refused (ErrCorrupt, or
// ErrLeaseLost): a renewal written over the record would repair it by
// guessing, and would tell the check nothing of whether the edit landed.
func checkCorruptSlot(e *env) {
	c, ok := e.h.(SlotCorrupter)
	if !ok {
		e.t.Skipf("the harness (%T) does not implement the optional tck.SlotCorrupter: "+
			"this check writes a slot's record wrong under running stores", e.h)
	}
	a := e.open()
	for form := 0; ; form++ {
		ns := e.namespace(fmt.Sprintf("corrupt-%d", form), 2)
		held := e.acquire(a, ns, "a", e.long())
		wrote, err := c.CorruptSlot(e.ctx, ns.Name, held.Slot, form)
		e.operatorUnsupported(err, "write a slot's record wrong")
		e.fatalIf(err, "Harness.CorruptSlot(%q, %d, %d)", ns.Name, held.Slot, form)
		if !wrote {
			if form == 0 {
				e.t.Fatalf("Harness.CorruptSlot has no form 0: a SlotCorrupter writes at least one wrong value")
			}
			return
		}
		var other store.Lease
		for i, st := range []*store.Store{a, e.open()} {
			who := [...]string{"the store that holds its term", "a store that never read it"}[i]
			l, err := st.Slots().Acquire(e.ctx, ns, "b", e.long())
			if err != nil || l.Slot == held.Slot {
				e.t.Fatalf("Acquire by %s of namespace %q, whose slot %d's record was corrupted under a live term (form %d) "+
					"and whose other slot is free: slot %d at fence %d, %v; want the other slot (the corrupt one passed over, "+
					"see driver.SlotLeaseStore.Acquire)", who, ns.Name, held.Slot, form, l.Slot, l.Fence, err)
			}
			if i == 0 {
				e.fatalIf(st.Slots().Release(e.ctx, l), "Release of slot %d", l.Slot)
			}
			other = l
		}
		l, err := a.Slots().Acquire(e.ctx, ns, "c", e.long())
		if !errors.Is(err, store.ErrExhausted) {
			e.t.Errorf("Acquire of namespace %q, whose slot %d's record was corrupted (form %d) and slot %d is held: "+
				"slot %d at fence %d, %v; want ErrExhausted, never a term on the corrupt slot",
				ns.Name, held.Slot, form, other.Slot, l.Slot, l.Fence, err)
		}
		if r, err := a.Slots().Renew(e.ctx, held); !errors.Is(err, store.ErrCorrupt) && !errors.Is(err, store.ErrLeaseLost) {
			e.t.Errorf("Renew of the term on slot %d of %q, whose record was corrupted (form %d): expires %v, %v; "+
				"want ErrCorrupt or ErrLeaseLost, nothing written over the record", held.Slot, ns.Name, form, r.ExpiresAt, err)
		}
	}
}
