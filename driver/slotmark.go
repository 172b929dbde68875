package driver

import (
	"fmt"
	"math"
)

// SlotMark is the furthest state of one slot a store has seen, read or
// written: the slot regression guard (docs/design.md, Slot leases). A
// driver keeps one per slot and refuses, with ErrCorrupt, a record read
// behind it: written back from a copy, or restored from a backup, it
// would start a term again at a fence and a floor handed out before.
//
// A slot's states are ordered by what only grows: the fence first; within
// one fence, CeilingMin (a renewal writes the ceiling as the new minimum);
// the term is released at most once, and after its release NextFloor only
// grows (a seed raises it). The fence alone cannot tell a copy taken
// during the term it still holds. A backend's versions cannot tell either:
// a record written back gets a new one, a restored backup goes back and
// then on past the versions the store saw.
//
// The zero SlotMark is behind every state. Marks are comparable with ==.
type SlotMark struct {
	fence      int64
	ceilingMin int64
	released   bool
	nextFloor  int64 // with released
}

// MarkOf is r's state as a mark.
func MarkOf(r SlotRecord) SlotMark {
	m := SlotMark{fence: r.Fence, ceilingMin: r.CeilingMin, released: r.Owner == ""}
	if m.released {
		m.nextFloor = r.NextFloor
	}
	return m
}

// FenceMark is a mark of fence alone, for a driver that orders a slot's
// states by the fence only: every record with that fence is level with
// it.
func FenceMark(fence int64) SlotMark {
	return SlotMark{fence: fence, ceilingMin: math.MinInt64}
}

// Fence is the highest fence seen.
func (m SlotMark) Fence() int64 { return m.fence }

// Behind says how r is behind m, or "" if it is not.
func (m SlotMark) Behind(r SlotRecord) string {
	switch got := MarkOf(r); {
	case got.fence < m.fence:
		return fmt.Sprintf("fence %d, below %d", got.fence, m.fence)
	case got.fence > m.fence:
		return ""
	case got.ceilingMin < m.ceilingMin:
		return fmt.Sprintf("fence %d with ceiling_min %d, below %d", got.fence, got.ceilingMin, m.ceilingMin)
	case m.released && !got.released:
		return fmt.Sprintf("fence %d held by %s, a term released before", got.fence, r.Owner)
	case m.released && got.nextFloor < m.nextFloor:
		return fmt.Sprintf("fence %d released with next_floor %d, below %d", got.fence, got.nextFloor, m.nextFloor)
	}
	return ""
}

// Ahead is the furthest of m and got.
func (m SlotMark) Ahead(got SlotMark) SlotMark {
	switch {
	case got.fence > m.fence:
		return got
	case got.fence < m.fence:
		return m
	}
	m.ceilingMin = max(m.ceilingMin, got.ceilingMin)
	m.released = m.released || got.released
	m.nextFloor = max(m.nextFloor, got.nextFloor)
	return m
}
