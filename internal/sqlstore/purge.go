package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/cosid-go/store/driver"
)

// Purge deletes every row of the store's tables (the rows of cosid_meta
// stay, and slot_fence_floor there is raised to the highest slot fence
// purged, so a slot's fences keep growing after a purge as lock fences do) and returns what it deleted, children before parents as the
// memory driver lists them: "range orders", "slot workers/3",
// "owner workers/host-a", "namespace workers". Dialect.PurgeMore adds the
// driver's own tables (locks). Meant for a store no instance uses: a slot
// whose term may still issue, or whose next floor is ahead of the
// database's clock, stops it with ErrLocked, and a sealed key or namespace
// with ErrSealed, deleting nothing (see driver.Purger).
func (s *Store) Purge(ctx context.Context) ([]string, error) {
	deleted := []string{}
	err := s.db.Tx(ctx, func(tx Querier) error {
		deleted = deleted[:0]
		if s.d.PurgeLock != "" {
			if _, err := tx.Exec(ctx, s.d.Rewrite(s.d.PurgeLock)); err != nil {
				return err
			}
		}
		if err := s.checkTerms(ctx, tx); err != nil {
			return err
		}
		// Seals are refused after the driver's own ErrLocked checks
		// (PurgeMore's locks), as every driver orders them.
		sealedKeys, err := strings1(ctx, tx, s.q.PurgeSealedKeys)
		if err != nil {
			return err
		}
		sealedSpaces, err := strings1(ctx, tx, s.q.PurgeSealedNamespaces)
		if err != nil {
			return err
		}
		keys, err := strings1(ctx, tx, s.q.Keys)
		if err != nil {
			return err
		}
		for _, k := range keys {
			deleted = append(deleted, "range "+k)
		}
		names, err := strings1(ctx, tx, s.q.PurgeNamespaces)
		if err != nil {
			return err
		}
		for _, ns := range names {
			slots, err := strings1(ctx, tx, s.q.PurgeSlots, ns)
			if err != nil {
				return err
			}
			for _, n := range slots {
				deleted = append(deleted, fmt.Sprintf("slot %s/%s", ns, n))
			}
			owners, err := strings1(ctx, tx, s.q.PurgeOwners, ns)
			if err != nil {
				return err
			}
			for _, o := range owners {
				deleted = append(deleted, "owner "+ns+"/"+o)
			}
			deleted = append(deleted, "namespace "+ns)
		}
		if err := s.raiseFenceFloor(ctx, tx); err != nil {
			return err
		}
		for _, q := range s.q.PurgeDelete {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		if s.d.PurgeMore != nil {
			more, err := s.d.PurgeMore(ctx, tx)
			if err != nil {
				return err
			}
			deleted = append(deleted, more...)
		}
		if err := driver.PurgeSealedRefusal(sealedKeys, sealedSpaces); err != nil {
			return fmt.Errorf("%s: purge: %w", s.d.Name, err) // rolls every deletion back
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.forget()
	return deleted, nil
}

// checkTerms gives ErrLocked for the first slot whose term may still issue
// timestamps, or whose next floor is ahead (driver.SlotRecord.PurgeRefusal),
// at the database's time. It runs in
// the purge's transaction, after PurgeLock: no term starts or renews
// between the check and the deletion. A row's fields are read as they are,
// not checked (see slotRow.check), so that a corrupt store can be purged.
func (s *Store) checkTerms(ctx context.Context, tx Querier) error {
	rows, err := tx.Query(ctx, s.q.PurgeTerms)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var ns string
		var r slotRow
		var now int64
		if err := rows.Scan(append(append([]any{&ns}, r.dest()...), &now)...); err != nil {
			return err
		}
		if err := r.rec.PurgeRefusal(ns, r.slot, now); err != nil {
			return fmt.Errorf("%s: purge: %w", s.d.Name, err)
		}
	}
	return rows.Err()
}

// strings1 returns the one text column of a query, sorted bytewise.
func strings1(ctx context.Context, q Querier, query string, args ...any) ([]string, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	sort.Strings(out)
	return out, rows.Err()
}

// fenceFloor returns the highest slot fence a purge deleted (0 if none).
func (s *Store) fenceFloor(ctx context.Context, q Querier) (int64, error) {
	var v string
	err := q.QueryRow(ctx, s.q.FenceFloor).Scan(&v)
	if errors.Is(err, ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return parseFenceFloor(&v)
}

// parseFenceFloor reads slot_fence_floor's value (nil: no row, 0).
func parseFenceFloor(v *string) (int64, error) {
	if v == nil {
		return 0, nil
	}
	n, err := strconv.ParseInt(*v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("cosid_meta slot_fence_floor is %q, not a fence: %w", *v, driver.ErrCorrupt)
	}
	return n, nil
}

// raiseFenceFloor records the highest slot fence before a purge deletes them.
func (s *Store) raiseFenceFloor(ctx context.Context, q Querier) error {
	floor, err := s.fenceFloor(ctx, q)
	if err != nil {
		return err
	}
	var top *int64
	if err := q.QueryRow(ctx, s.q.MaxFence).Scan(&top); err != nil {
		return err
	}
	if top == nil || *top <= floor {
		return nil
	}
	_, err = q.Exec(ctx, s.q.RaiseFenceFloor, strconv.FormatInt(*top, 10))
	return err
}
