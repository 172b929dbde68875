package sqlstore

import (
	"context"
	"fmt"

	"github.com/cosid-go/store/driver"
)

// SeedSlot raises slot n's history for a migration (see driver.SlotSeeder),
// as the memory driver does: a slot never used becomes a released slot
// with the given fence and next floor; a term that expired unreleased is
// ended first, its ceiling taken into the next floor.
func (s *Store) SeedSlot(ctx context.Context, want driver.Namespace, n int, fence, nextFloor int64) error {
	return s.db.Tx(ctx, func(tx Querier) error {
		now, err := s.namespace(ctx, tx, want)
		if err != nil {
			return err
		}
		a := &acquire{s: s, tx: tx, ns: want.Name}
		rows, err := a.lockRows(ctx, []int{n})
		if err != nil {
			return err
		}
		r := rows[n]
		if r == nil {
			floor, err := s.fenceFloor(ctx, tx)
			if err != nil {
				return err
			}
			r = &slotRow{slot: n, fence: max(fence, floor), nextFloor: nextFloor, mtime: now}
			ok, err := s.write(ctx, tx, want.Name, r, 0, true)
			if err == nil && !ok {
				err = fmt.Errorf("slot %d was created meanwhile; seed again", n)
			}
			return err
		}
		if r.owner != "" && now < r.expiresAt {
			return fmt.Errorf("slot %d has a live term of %s (fence %d) until %d: %w",
				n, r.owner, r.fence, r.expiresAt, driver.ErrLocked)
		}
		old, changed := r.version, false
		if r.owner != "" {
			r.nextFloor = max(r.nextFloor, r.ceiling)
			r.lastOwner, r.owner, r.incarnation = r.owner, "", ""
			changed = true
		}
		if fence > r.fence {
			r.fence, changed = fence, true
		}
		if nextFloor > r.nextFloor {
			r.nextFloor, changed = nextFloor, true
		}
		if !changed {
			return nil
		}
		r.mtime = now
		ok, err := s.write(ctx, tx, want.Name, r, old, false)
		if err == nil && !ok {
			err = fmt.Errorf("slot %d changed meanwhile; seed again", n)
		}
		return err
	})
}
