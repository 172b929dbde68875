package tck

import (
	"context"
	"errors"
	"fmt"

	"github.com/cosid-go/store"
)

// Corrupter is an optional Harness capability: a record written wrong
// under running stores (by hand, by a broken tool, a bad disk).
// CorruptRangeKey writes into range key's record the form-th value (form
// 0, 1, ...) that the driver's own format does not allow (text that is no
// number, a number written another way than the driver writes it),
// replacing it, and reports false, writing nothing, when it has no
// form-th value. An error wrapping store.ErrUnsupported says why the
// backend cannot hold such a value; the check skips with it.
type Corrupter interface {
	CorruptRangeKey(ctx context.Context, key string, form int) (bool, error)
}

// checkCorruptKey: a range key whose record was corrupted is refused
// (ErrCorrupt) by every read of it, from the store that used it and from
// a store that never read it: never a range, never a next value guessed
// from it (driver.RangeStore.Next).
func checkCorruptKey(e *env) {
	c, ok := e.h.(Corrupter)
	if !ok {
		e.t.Skipf("the harness (%T) does not implement the optional tck.Corrupter: "+
			"this check writes a range key's record wrong under running stores", e.h)
	}
	a := e.open()
	for form := 0; ; form++ {
		key := fmt.Sprintf("corrupt/%d", form)
		e.next(a, key, 10)
		wrote, err := c.CorruptRangeKey(e.ctx, key, form)
		e.operatorUnsupported(err, "write a range key's record wrong")
		e.fatalIf(err, "Harness.CorruptRangeKey(%q, %d)", key, form)
		if !wrote {
			if form == 0 {
				e.t.Fatalf("Harness.CorruptRangeKey has no form 0: a Corrupter writes at least one wrong value")
			}
			return
		}
		for i, st := range []*store.Store{a, e.open()} {
			who := [...]string{"the store that used it", "a store that never read it"}[i]
			if next, sealed, err := st.Ranges().Current(e.ctx, key); !errors.Is(err, store.ErrCorrupt) {
				e.t.Errorf("Current(%q) by %s after its record was corrupted (form %d): %d, sealed %v, %v; want ErrCorrupt",
					key, who, form, next, sealed, err)
			}
			if r, err := st.Ranges().Next(e.ctx, key, 10); !errors.Is(err, store.ErrCorrupt) {
				e.t.Errorf("Next(%q) by %s after its record was corrupted (form %d): %v, %v; want ErrCorrupt, never a range",
					key, who, form, r, err)
			}
		}
	}
}
