package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/cosid-go/store/driver"
)

// Next reserves [start, start+step) of key in one statement: an upsert, or
// an update once the key is known to exist (a key seen once and missing
// later fails the regression guard instead of starting again at 0).
func (s *Store) Next(ctx context.Context, key string, step int64) (int64, error) {
	if err := driver.CheckStep(step); err != nil {
		return 0, err
	}
	floor, known, wasSealed := s.nextState(key)
	q := s.q.Next
	if known {
		q = s.q.NextUpdate
	}
	next, err := s.queryInt64(ctx, q, key, step)
	if errors.Is(err, ErrNoRows) {
		return 0, s.refused(ctx, key, step)
	}
	if err != nil {
		return 0, err
	}
	start := next - step
	if !known {
		s.sawRow(key)
	}
	// Reserved, so not sealed now: written already, but never handed out.
	if err := s.guardSealed(key, wasSealed, false); err != nil {
		return 0, err
	}
	// The range must start at or above every value seen before; next,
	// above start, is what this store has seen now. Refused, the range
	// is written already, but never handed out: a gap, not a duplicate.
	if err := s.guardRange(key, floor, start, next); err != nil {
		return 0, err
	}
	return start, nil
}

// refused tells a sealed key from an exhausted one, on that rare path only.
func (s *Store) refused(ctx context.Context, key string, step int64) error {
	next, sealed, err := s.Current(ctx, key)
	switch {
	case errors.Is(err, driver.ErrCorrupt):
		return fmt.Errorf("a key this store used is gone or went back: %w", err)
	case err != nil:
		return err
	case sealed:
		return fmt.Errorf("sealed at %d: %w", next, driver.ErrSealed)
	case next > math.MaxInt64-step:
		return fmt.Errorf("next value %d plus step %d passes %d: %w", next, step, int64(math.MaxInt64), driver.ErrExhausted)
	}
	// Unsealed and room left now: another store changed it in between;
	// the caller may try again.
	return fmt.Errorf("key changed during Next (now at %d, not sealed); nothing was reserved", next)
}

// Current returns key's next value and whether it is sealed.
func (s *Store) Current(ctx context.Context, key string) (int64, bool, error) {
	floor := s.seenNext(key)
	wasSealed := s.sawSealed(s.sealed, key)
	var next int64
	var sealed bool
	err := s.db.QueryRow(ctx, s.q.Current, key).Scan(&next, &sealed)
	if errors.Is(err, ErrNoRows) {
		err, next = nil, 0
	} else if err == nil {
		s.sawRow(key)
	}
	if err != nil {
		return 0, false, err
	}
	if err := s.guardSealed(key, wasSealed, sealed); err != nil {
		return 0, false, err
	}
	return next, sealed, s.guardNext(key, floor, next)
}

// Seal marks key sealed (creating it at 0) and returns its next value.
func (s *Store) Seal(ctx context.Context, key string) (int64, error) {
	floor := s.seenNext(key)
	var next int64
	var err error
	if floor > 0 {
		err = s.db.QueryRow(ctx, s.q.SealUpdate, key, floor).Scan(&next)
		if errors.Is(err, ErrNoRows) {
			// Gone or went back (ErrCorrupt from Current's guard).
			cur, _, err := s.Current(ctx, key)
			if err != nil {
				return 0, err
			}
			return 0, fmt.Errorf("key changed during Seal (now at %d); not sealed", cur)
		}
	} else {
		err = s.db.QueryRow(ctx, s.q.Seal, key).Scan(&next)
	}
	if err != nil {
		return 0, err
	}
	s.sawRow(key)
	if err := s.guardSealed(key, false, true); err != nil {
		return 0, err
	}
	return next, s.guardNext(key, floor, next)
}

// Init creates key at next; an existing key must already be at next.
func (s *Store) Init(ctx context.Context, key string, next int64) error {
	floor := s.seenNext(key)
	var n int64
	if next >= floor {
		// Below a value this store saw, the key exists elsewhere or went
		// back: either way Init fails, and must not write first.
		var err error
		if n, err = s.db.Exec(ctx, s.q.Init, key, next); err != nil {
			return err
		}
	}
	if n == 1 {
		s.sawRow(key)
		return s.guardNext(key, floor, next)
	}
	cur, _, err := s.Current(ctx, key)
	if err != nil {
		return err
	}
	if cur != next {
		return fmt.Errorf("key exists with next value %d, not %d: %w", cur, next, driver.ErrConfigMismatch)
	}
	return nil
}

// Keys lists every key, sorted bytewise (whatever the database's collation).
func (s *Store) Keys(ctx context.Context) ([]string, error) {
	rows, err := s.db.Query(ctx, s.q.Keys)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	keys := []string{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sort.Strings(keys)
	return keys, nil
}
