package sqlstore

import (
	"fmt"

	"github.com/cosid-go/store/driver"
)

// The slot regression guard (driver.SlotMark): a store remembers, per
// slot, the furthest state it saw the slot's row in, and refuses a row
// read behind it (ErrCorrupt, nothing written).

// The marks an operation compares its reads with are taken before it
// reads: only those come from commits that happened before it. (Rows seen
// by operations running at the same time may commit in any order.)

// slotMarkOf returns the mark of one slot.
func (s *Store) slotMarkOf(ns string, slot int) driver.SlotMark {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seenSl[slotKey{ns, slot}]
}

// slotMarks copies the marks of namespace ns's slots.
func (s *Store) slotMarks(ns string) map[int]driver.SlotMark {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]driver.SlotMark{}
	for k, m := range s.seenSl {
		if k.ns == ns {
			out[k.slot] = m
		}
	}
	return out
}

// wentBack is the regression guard's error: slot n holds, or lacks, why.
func wentBack(ns string, n int, why string) error {
	return fmt.Errorf("slot %s/%d holds %s this store saw: the database went back (a row written back from a copy, "+
		"restored from a backup, or a replica promoted without the last commits), and what it holds was handed out: %w",
		ns, n, why, driver.ErrCorrupt)
}

// sawSlot records a slot state read, or written and committed: recorded
// at its write, a transaction then aborted would leave this store
// expecting a state the database never had.
func (s *Store) sawSlot(ns string, slot int, m driver.SlotMark) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := slotKey{ns, slot}
	s.seenSl[k] = s.seenSl[k].Ahead(m)
}
