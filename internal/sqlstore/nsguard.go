package sqlstore

import (
	"fmt"

	"github.com/cosid-go/store/driver"
)

// sawSealedNs reports whether this store has seen namespace ns sealed.
func (s *Store) sawSealedNs(ns string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sealedNs[ns]
}

// guardSealedNs refuses namespace ns read unsealed (sealed false) when
// this store saw it sealed before the operation began (wasSealed): only a
// purge, which clears the guard, or the database going back undoes a
// seal. A row written back from before the seal would let this store
// start terms in a namespace that moved to another store, which hands out
// the same worker IDs. It records a seal seen.
func (s *Store) guardSealedNs(ns string, wasSealed, sealed bool) error {
	if wasSealed && !sealed {
		return fmt.Errorf("namespace %q was sealed when this store saw it before, and is not now: the database went back "+
			"(restored from a backup, or a row written back from a copy): %w", ns, driver.ErrCorrupt)
	}
	if sealed {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.sealedNs[ns] = true
	}
	return nil
}
