package tck

import (
	"fmt"
	"strings"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// checkPurgeSeals: a purge never forgets that a key or namespace moved away
// (see driver.Purger): while the store holds a sealed range key or a
// sealed namespace it deletes nothing and gives ErrSealed naming them;
// afterwards the seals stand (an instance still pointed at the store gets
// ErrSealed) and the rest of the store is as it was.
func checkPurgeSeals(e *env) {
	st := e.open()
	needDriver[driver.Purger](e, st)
	if !e.suite.Ranges && !e.suite.Slots {
		e.t.Skip("nothing to seal: the driver has neither ranges nor slots")
	}
	var names []string
	var open store.Range
	ns, sealedNS := e.namespace("purge-seal-open", 2), e.namespace("purge-seal-moved", 2)
	if e.suite.Ranges {
		open = e.next(st, "purge-seal/open", 5)
		e.next(st, "purge-seal/moved", 3)
		_, err := st.Ranges().Seal(e.ctx, "purge-seal/moved")
		e.fatalIf(err, "Seal")
		names = append(names, `"purge-seal/moved"`)
	}
	if e.suite.Slots {
		e.releaseUsed(st, e.acquire(st, ns, "a", store.AcquireOptions{TTL: e.longTTL, Preferred: new(0)}))
		e.fatalIf(st.Slots().Seal(e.ctx, sealedNS.Name), "Seal(%q)", sealedNS.Name)
		names = append(names, fmt.Sprintf("%q", sealedNS.Name))
	}
	op := e.open()
	deleted, err := op.Purge(e.ctx)
	e.wantIs(err, store.ErrSealed, "Purge of a store with sealed keys or namespaces (deleted %q)", deleted)
	if len(deleted) != 0 {
		e.t.Errorf("the refused purge reports deleting %q, want nothing", deleted)
	}
	for _, n := range names {
		if err != nil && !strings.Contains(err.Error(), n) {
			e.t.Errorf("Purge's refusal %q does not name %s", err, n)
		}
	}
	fresh := e.open()
	if e.suite.Ranges {
		e.wantCurrent(fresh, "purge-seal/moved", 3, true)
		_, err := fresh.Ranges().Next(e.ctx, "purge-seal/moved", 1)
		e.wantIs(err, store.ErrSealed, "Next of a sealed key after a refused purge")
		e.wantRange(e.next(fresh, "purge-seal/open", 1), open.End, open.End+1, "Next of an open key after a refused purge")
	}
	if e.suite.Slots {
		_, err := fresh.Slots().Acquire(e.ctx, sealedNS, "b", e.long())
		e.wantIs(err, store.ErrSealed, "Acquire in a sealed namespace after a refused purge")
		if _, ok := e.slotInfo(fresh, ns.Name, 0); !ok {
			e.t.Errorf("slot %s/0 is gone after a refused purge", ns.Name)
		}
	}
}

// checkPurgeFloorAhead: a slot released without its last used timestamp
// starts its next term at the old ceiling; while that next floor is ahead
// of the store's clock a purge deletes nothing and gives ErrLocked naming
// the slot (see driver.Purger): the purge would forget the floor, and the
// next term would start below timestamps already issued. With the
// harness's ClockSetter, the purge goes through once the clock reaches the
// floor.
func checkPurgeFloorAhead(e *env) {
	a := e.open()
	needDriver[driver.Purger](e, a)
	ns := e.namespace("purge-floor", 1)
	l := e.acquire(a, ns, "a", e.long())
	e.fatalIf(a.Slots().Release(e.ctx, l), "Release without a used timestamp")
	e.wantReleased(a, ns.Name, l.Slot, l.Ceiling, "released without a used timestamp")
	op := e.open()
	deleted, err := op.Purge(e.ctx)
	e.wantIs(err, store.ErrLocked, "Purge while slot %s/%d's next floor %d is ahead (deleted %q)", ns.Name, l.Slot, l.Ceiling, deleted)
	if slot := fmt.Sprintf("%s/%d", ns.Name, l.Slot); err != nil && !strings.Contains(err.Error(), slot) {
		e.t.Errorf("Purge's refusal %q does not name the slot as %s", err, slot)
	}
	if len(deleted) != 0 {
		e.t.Errorf("the refused purge reports deleting %q, want nothing", deleted)
	}
	e.wantReleased(op, ns.Name, l.Slot, l.Ceiling, "after a refused purge")
	cs, ok := e.h.(ClockSetter)
	if !ok {
		return
	}
	e.fatalIf(cs.SetClock(e.ctx, time.UnixMilli(l.Ceiling-1)), "SetClock")
	_, err = op.Purge(e.ctx)
	e.wantIs(err, store.ErrLocked, "Purge at %d, just before the next floor %d", l.Ceiling-1, l.Ceiling)
	e.fatalIf(cs.SetClock(e.ctx, time.UnixMilli(l.Ceiling)), "SetClock")
	_, err = op.Purge(e.ctx)
	e.fatalIf(err, "Purge at the next floor %d", l.Ceiling)
}
