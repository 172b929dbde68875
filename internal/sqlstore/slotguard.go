package sqlstore

import (
	"fmt"

	"github.com/cosid-go/store/driver"
)

// The slot regression guard: a store remembers, per slot, the furthest
// state it saw the slot's row in, and refuses a row read behind it
// (ErrCorrupt, nothing written): a row written back from a copy, or a
// restored backup, would start a term at a fence and a floor handed out
// before. The fence alone cannot tell a copy taken during the term it
// still holds: within one fence, ceiling_min only grows (a renewal writes
// the ceiling as the new minimum), the term is released at most once, and
// after its release next_floor only grows (a seed raises it). The rule is
// the ZooKeeper driver's (drivers/zookeeper/slot_guard.go).

// slotMark is the furthest state of a slot row seen.
type slotMark struct {
	fence      int64
	ceilingMin int64
	released   bool
	nextFloor  int64 // with released
}

func markOf(r driver.SlotRecord) slotMark {
	m := slotMark{fence: r.Fence, ceilingMin: r.CeilingMin, released: r.Owner == ""}
	if m.released {
		m.nextFloor = r.NextFloor
	}
	return m
}

// behind says how r is behind m, or "" if it is not.
func (m slotMark) behind(r driver.SlotRecord) string {
	switch got := markOf(r); {
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

// ahead is the furthest of m and got.
func (m slotMark) ahead(got slotMark) slotMark {
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

// The marks an operation compares its reads with are taken before it
// reads: only those come from commits that happened before it. (Rows seen
// by operations running at the same time may commit in any order.)

// slotMarkOf returns the mark of one slot.
func (s *Store) slotMarkOf(ns string, slot int) slotMark {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seenSl[slotKey{ns, slot}]
}

// slotMarks copies the marks of namespace ns's slots.
func (s *Store) slotMarks(ns string) map[int]slotMark {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]slotMark{}
	for k, m := range s.seenSl {
		if k.ns == ns {
			out[k.slot] = m
		}
	}
	return out
}

// guardSlot refuses a row of slot n read behind mark (taken before the
// read began), and records it otherwise.
func (s *Store) guardSlot(ns string, mark slotMark, r *slotRow) error {
	if why := mark.behind(r.rec); why != "" {
		return fmt.Errorf("slot %s/%d holds %s this store saw: the database went back (a row written back from a copy, "+
			"restored from a backup, or a replica promoted without the last commits), and what it holds was handed out: %w",
			ns, r.slot, why, driver.ErrCorrupt)
	}
	s.sawSlot(ns, r.slot, markOf(r.rec))
	return nil
}

// sawSlot records a slot state read, or written and committed: recorded
// at its write, a transaction then aborted would leave this store
// expecting a state the database never had.
func (s *Store) sawSlot(ns string, slot int, m slotMark) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := slotKey{ns, slot}
	s.seenSl[k] = s.seenSl[k].ahead(m)
}
