package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/cosid-go/store/driver"
)

// slotCols are the columns of a slot row, in slotRow.scan's order.
const slotCols = `slot, owner, incarnation, last_owner, fence, ttl_ms, tolerance_ms, floor,
	expires_min, ceiling_min, next_floor, mtime, expires_at, ceiling, version`

// slotRow is one cosid_slot row: a driver.SlotRecord (its Written is the
// mtime column), the slot number, the expiry and ceiling the record gives
// (stored so that the database can search free slots) and a version for
// compare-and-set.
type slotRow struct {
	slot      int
	rec       driver.SlotRecord
	expiresAt int64
	ceiling   int64
	version   int64
}

func (r *slotRow) dest() []any {
	c := &r.rec
	return []any{&r.slot, &c.Owner, &c.Incarnation, &c.LastOwner, &c.Fence, &c.TTL, &c.Tolerance,
		&c.Floor, &c.ExpiresMin, &c.CeilingMin, &c.NextFloor, &c.Written, &r.expiresAt, &r.ceiling, &r.version}
}

// derive recomputes the stored expiry and ceiling from the record.
func (r *slotRow) derive() {
	r.expiresAt = r.rec.ExpiresAt()
	r.ceiling = r.rec.Ceiling()
}

// check reports a row whose stored expiry and ceiling disagree with its
// record (edited by hand, or by a broken writer) as corrupt, never
// guessing which is right.
func (r *slotRow) check(ns string) error {
	want := *r
	want.derive()
	if want.expiresAt != r.expiresAt || want.ceiling != r.ceiling || r.rec.Fence < 0 || r.rec.TTL < 0 {
		return fmt.Errorf("slot %s/%d: stored expires_at %d and ceiling %d do not follow from its fields (%d and %d): %w",
			ns, r.slot, r.expiresAt, r.ceiling, want.expiresAt, want.ceiling, driver.ErrCorrupt)
	}
	return nil
}

func (r *slotRow) args(ns string) []any {
	c := r.rec
	return []any{ns, r.slot, c.Owner, c.Incarnation, c.LastOwner, c.Fence, c.TTL, c.Tolerance,
		c.Floor, c.ExpiresMin, c.CeilingMin, c.NextFloor, c.Written, r.expiresAt, r.ceiling, r.version}
}

func (r *slotRow) lease(ns string) driver.Lease {
	l := r.rec.Lease(ns, r.slot)
	l.State = r.version
	return l
}

// write stores r: an insert when old is nil, else a compare-and-set on
// old's version. It reports whether the row was written.
func (s *Store) write(ctx context.Context, q Querier, ns string, r *slotRow, oldVersion int64, insert bool) (bool, error) {
	r.derive()
	var n int64
	var err error
	if insert {
		r.version = 1
		n, err = q.Exec(ctx, s.q.SlotInsert, r.args(ns)...)
	} else {
		r.version = oldVersion + 1
		n, err = q.Exec(ctx, s.q.SlotUpdate, append(r.args(ns), oldVersion)...)
	}
	return n == 1, err
}

// readSlot reads one slot with the store's time; a missing row is nil.
func (s *Store) readSlot(ctx context.Context, q Querier, ns string, slot int) (*slotRow, int64, error) {
	mark := s.slotMarkOf(ns, slot)
	r := &slotRow{}
	var now int64
	err := q.QueryRow(ctx, s.q.SlotRead, ns, slot).Scan(append(r.dest(), &now)...)
	if errors.Is(err, ErrNoRows) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	if _, err := s.accept(ns, mark, r); err != nil {
		return nil, 0, err
	}
	return r, now, nil
}

// accept checks a row just read: not behind what this store saw of the
// slot before the read began (mark), whether or not it is consistent (a
// row behind is a database gone back, never merely corrupt), then
// consistent (slotRow.check: corrupt reports that refusal, which an
// Acquire passes over), and records it.
func (s *Store) accept(ns string, mark driver.SlotMark, r *slotRow) (corrupt bool, err error) {
	if why := mark.Behind(r.rec); why != "" {
		return false, wentBack(ns, r.slot, why)
	}
	if err := r.check(ns); err != nil {
		return true, err
	}
	s.sawSlot(ns, r.slot, driver.MarkOf(r.rec))
	return false, nil
}

// recordUsed records that slot n, whose row tx just created, was used
// (cosid_slot_used). A record there already means the slot was created
// before and its row deleted since, not by a purge: its fences and its
// term's ceiling are gone with the row, and a term started from the
// record's absence could repeat worker IDs and timestamps a live holder
// issues. The insert of the row came first, so a concurrent creation of
// the same slot made this one write nothing instead of ending here.
func (s *Store) recordUsed(ctx context.Context, tx Querier, ns string, n int) error {
	added, err := tx.Exec(ctx, s.q.SlotUsed, ns, n)
	if err != nil {
		return err
	}
	if added == 0 {
		return usedBefore(ns, n)
	}
	return nil
}

// usedBefore is the error of a slot created again whose record of use
// says it was created before (recordUsed).
func usedBefore(ns string, n int) error {
	return fmt.Errorf("slot %s/%d was used before and its row is gone (deleted by hand, or a partial restore): "+
		"its fences and timestamps are unknown, so it is not started again: %w", ns, n, driver.ErrCorrupt)
}

// create inserts r, a slot never used, with its record of use and owner's
// index idx with the slot put first, in one statement (SlotCreate): the
// three writes of write, recordUsed and remember, with their outcomes. It
// reports false when another acquire created the slot meanwhile, and,
// when claim is set, busy when another is creating it now (its claim,
// Dialect.ClaimSlot): then nothing was written and nothing waited.
func (s *Store) create(ctx context.Context, tx Querier, ns string, r *slotRow, owner string, idx []int, claim bool) (ok, busy bool, err error) {
	r.derive()
	r.version = 1
	var inserted, used int64
	var claimed bool
	args := append(r.args(ns), owner, indexText(idx, r.slot), claim)
	if err := tx.QueryRow(ctx, s.q.SlotCreate, args...).Scan(&inserted, &used, &claimed); err != nil || !claimed || inserted == 0 {
		return false, !claimed, err
	}
	if used == 0 {
		return false, false, usedBefore(ns, r.slot)
	}
	return true, false, nil
}
