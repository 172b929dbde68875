package sqlstore

import (
	"fmt"

	"github.com/cosid-go/store/driver"
)

// The seal guard: a store remembers the keys (Store.sealed) and the
// namespaces (Store.sealedNs) it saw sealed, and refuses one read unsealed
// when it saw it sealed before the operation began: only a purge, which
// clears the guard (forget), or the database going back undoes a seal.

// sawSealed reports whether this store has seen name sealed in seen
// (s.sealed or s.sealedNs).
func (s *Store) sawSealed(seen map[string]bool, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return seen[name]
}

// keepsSeal reports whether name, read sealed or not, keeps the seal this
// store saw before the operation began (wasSealed), and records in seen
// a seal read.
func (s *Store) keepsSeal(seen map[string]bool, name string, wasSealed, sealed bool) bool {
	if sealed {
		s.mu.Lock()
		defer s.mu.Unlock()
		seen[name] = true
	}
	return sealed || !wasSealed
}

// guardSealed refuses key read unsealed when this store saw it sealed
// before. A row written back from before the seal has the same next
// value, so guardNext cannot tell, and its values are the ones the store
// the key moved to hands out.
func (s *Store) guardSealed(key string, wasSealed, sealed bool) error {
	if !s.keepsSeal(s.sealed, key, wasSealed, sealed) {
		return fmt.Errorf("key was sealed when this store saw it before, and is not now: the database went back "+
			"(restored from a backup, or a replica promoted without the last commits): %w", driver.ErrCorrupt)
	}
	return nil
}

// guardSealedNs refuses namespace ns read unsealed when this store saw it
// sealed before. A row written back from before the seal would let this
// store start terms in a namespace that moved to another store, which
// hands out the same worker IDs.
func (s *Store) guardSealedNs(ns string, wasSealed, sealed bool) error {
	if !s.keepsSeal(s.sealedNs, ns, wasSealed, sealed) {
		return fmt.Errorf("namespace %q was sealed when this store saw it before, and is not now: the database went back "+
			"(restored from a backup, or a row written back from a copy): %w", ns, driver.ErrCorrupt)
	}
	return nil
}
