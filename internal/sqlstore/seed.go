package sqlstore

import (
	"context"
	"fmt"

	"github.com/cosid-go/store/driver"
)

// SeedSlot raises slot n's history for a migration (see driver.SlotSeeder)
// by driver.SlotRecord.Seeded, in one transaction.
func (s *Store) SeedSlot(ctx context.Context, want driver.Namespace, n int, fence, nextFloor int64) error {
	return s.nsTx(ctx, want, func(tx Querier) error {
		ns, err := s.namespace(ctx, tx, want, "")
		if err != nil {
			return err
		}
		// A slot never used may be created by an Acquire meanwhile: its
		// insert then waited for that transaction and wrote nothing, and
		// the slot is read again, now locked, and judged as it is.
		for range 2 {
			done, err := s.seedOnce(ctx, tx, want.Name, ns, n, fence, nextFloor)
			if err != nil || done {
				return err
			}
		}
		return fmt.Errorf("slot %d changed meanwhile; seed again", n)
	})
}

// seedOnce is one read and write of SeedSlot; it reports false when the
// slot, read as never used, was created meanwhile.
func (s *Store) seedOnce(ctx context.Context, tx Querier, name string, ns nsState, n int, fence, nextFloor int64) (bool, error) {
	a := &acquire{s: s, tx: tx, ns: name}
	rows, err := a.lockRows(ctx, []int{n}, s.q.SlotsTail)
	if err != nil {
		return false, err
	}
	if err := a.corrupt[n]; err != nil {
		return false, err // a row that does not check is reported, not seeded over
	}
	r := rows[n]
	insert := r == nil
	if insert {
		// A slot never used since the last purge continues above it.
		r = &slotRow{slot: n, rec: driver.SlotRecord{Fence: ns.floor}}
	}
	old := r.version
	rec, changed, err := r.rec.Seeded(fence, nextFloor, ns.now)
	if err != nil {
		return false, fmt.Errorf("slot %d: %w", n, err)
	}
	if !changed {
		return true, nil
	}
	r.rec = rec
	ok, err := s.write(ctx, tx, name, r, old, insert)
	switch {
	case err != nil:
		return false, err
	case !ok && insert:
		return false, nil
	case !ok:
		return false, fmt.Errorf("slot %d changed meanwhile; seed again", n)
	case insert:
		return true, s.recordUsed(ctx, tx, name, n)
	}
	return true, nil
}
