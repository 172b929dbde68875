package sqlstore

import (
	"context"
	"fmt"

	"github.com/cosid-go/store/driver"
)

// SeedSlot raises slot n's history for a migration (see driver.SlotSeeder)
// by driver.SlotRecord.Seeded, in one transaction.
func (s *Store) SeedSlot(ctx context.Context, want driver.Namespace, n int, fence, nextFloor int64) error {
	return s.db.Tx(ctx, func(tx Querier) error {
		now, err := s.namespace(ctx, tx, want)
		if err != nil {
			return err
		}
		a := &acquire{s: s, tx: tx, ns: want.Name}
		rows, err := a.lockRows(ctx, []int{n}, s.q.SlotsTail)
		if err != nil {
			return err
		}
		r := rows[n]
		insert := r == nil
		if insert {
			// A slot never used since the last purge continues above it.
			floor, err := s.fenceFloor(ctx, tx)
			if err != nil {
				return err
			}
			r = &slotRow{slot: n, rec: driver.SlotRecord{Fence: floor}}
		}
		old := r.version
		rec, changed, err := r.rec.Seeded(fence, nextFloor, now)
		if err != nil {
			return fmt.Errorf("slot %d: %w", n, err)
		}
		if !changed {
			return nil
		}
		r.rec = rec
		ok, err := s.write(ctx, tx, want.Name, r, old, insert)
		if err == nil && !ok {
			err = fmt.Errorf("slot %d changed meanwhile; seed again", n)
		}
		if err == nil && insert {
			err = s.recordUsed(ctx, tx, want.Name, n)
		}
		return err
	})
}
