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
// starts no new term (driver.SlotLeaseStore.Acquire: its data is corrupt,
// so it is passed over, and the Acquire of a namespace with no other slot
// gives ErrExhausted; a driver that refuses the namespace outright, with
// ErrCorrupt, starts no term either), from the store that holds the term
// and from one that never read the slot.
func checkCorruptSlot(e *env) {
	c, ok := e.h.(SlotCorrupter)
	if !ok {
		e.t.Skipf("the harness (%T) does not implement the optional tck.SlotCorrupter: "+
			"this check writes a slot's record wrong under running stores", e.h)
	}
	a := e.open()
	for form := 0; ; form++ {
		ns := e.namespace(fmt.Sprintf("corrupt-%d", form), 1)
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
		for i, st := range []*store.Store{a, e.open()} {
			who := [...]string{"the store that holds its term", "a store that never read it"}[i]
			l, err := st.Slots().Acquire(e.ctx, ns, "b", e.long())
			switch {
			case err == nil:
				e.t.Errorf("Acquire by %s of namespace %q, whose one slot's record was corrupted under a live term (form %d), "+
					"gave slot %d at fence %d; want ErrExhausted (the slot passed over, see driver.SlotLeaseStore.Acquire) "+
					"or ErrCorrupt, never a term", who, ns.Name, form, l.Slot, l.Fence)
			case !errors.Is(err, store.ErrExhausted) && !errors.Is(err, store.ErrCorrupt):
				e.t.Errorf("Acquire by %s of namespace %q, whose one slot's record was corrupted (form %d): %v; "+
					"want ErrExhausted or ErrCorrupt", who, ns.Name, form, err)
			}
		}
	}
}
