package zookeeper

import (
	"fmt"

	"github.com/cosid-go/store/driver"
)

// The namespace seal guard: a store remembers, per namespace node (its
// path and creation zxid), that it saw the node sealed, and refuses the
// same node read unsealed (ErrCorrupt). A seal is never lifted: the node
// went back (written back from a copy taken before SealNamespace, a
// restored backup), and terms started in it would use the worker IDs the
// store the namespace moved to hands out. A purge deletes the node; one
// created after it has another czxid and is not refused.

// nsSealSeen returns the czxid of the namespace node at path this store
// saw sealed, or 0. Taken before a read, so that a seal this store makes
// while the read is under way is no evidence against it.
func (s *slotStore) nsSealSeen(path string) int64 {
	if v, ok := s.nsSealed.Load(path); ok {
		return v.(int64)
	}
	return 0
}

// guardNsSeal checks a namespace node read with creation zxid czxid
// against seen (nsSealSeen before the read), and records a seal read.
func (s *slotStore) guardNsSeal(path string, seen, czxid int64, sealed bool) error {
	switch {
	case sealed:
		s.nsSealed.Store(path, czxid)
	case seen != 0 && seen == czxid:
		return fmt.Errorf("zookeeper: namespace %s is not sealed, but this store saw it sealed: it went back "+
			"(written back from a copy, a restored backup), and its worker IDs moved to another store: %w", path, driver.ErrCorrupt)
	}
	return nil
}
