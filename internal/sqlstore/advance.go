package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/cosid-go/store/driver"
)

// Advance raises key's next value to next (driver.RangeAdvancer): a read
// under a row lock, then an upsert whose WHERE never lowers a key nor
// touches a sealed one, so it is safe even where the read takes no lock.
func (s *Store) Advance(ctx context.Context, key string, next int64) (int64, error) {
	floor := s.seenNext(key)
	var prev int64
	err := s.db.Tx(ctx, func(tx Querier) error {
		var sealed bool
		err := tx.QueryRow(ctx, s.q.AdvanceRead, key).Scan(&prev, &sealed)
		missing := errors.Is(err, ErrNoRows)
		if missing {
			prev, err = 0, nil
		}
		switch {
		case err != nil:
			return err
		case sealed:
			return fmt.Errorf("sealed at %d: %w", prev, driver.ErrSealed)
		case !missing && prev >= next:
			return nil
		}
		n, err := tx.Exec(ctx, s.q.Advance, key, next)
		if err == nil && n != 1 {
			err = fmt.Errorf("key changed during Advance (it was at %d); nothing written: run it again", prev)
		}
		return err
	})
	if err != nil {
		return prev, err // prev tells a sealed key's value
	}
	s.sawRow(key)
	// A key below a value this store saw went back: say so, raised or not.
	if err := s.guardNext(key, floor, prev); err != nil {
		return 0, err
	}
	return prev, s.guardNext(key, floor, max(prev, next))
}
