package zookeeper

import (
	"context"
	"errors"
	"fmt"

	"github.com/cosid-go/store/driver"
)

// Advance raises key's next value to next (driver.RangeAdvancer): a
// compare-and-set on the version it read, as Seal does. A write whose
// outcome is unknown is read again; the raise, if applied, is then found.
func (s *rangeStore) Advance(ctx context.Context, key string, next int64) (int64, error) {
	k, unlock, err := s.lockKey(ctx, key)
	if err != nil {
		return 0, err
	}
	defer unlock()
	path := s.rangePath(key)
	a := attempts{s: s.session}
	for {
		n, err := s.readKnown(ctx, k, path, &a)
		if err != nil {
			return 0, err
		}
		switch {
		case !n.exists:
			stat, err := s.createRange(ctx, path, formatRange(next, false), &a)
			if err != nil {
				return 0, err
			}
			if stat != nil {
				k.wrote(stat, next, false)
				return 0, nil
			}
			continue // created meanwhile, or an unknown outcome: read again
		case n.sealed:
			return n.next, fmt.Errorf("zookeeper: %s: sealed at %d: %w", path, n.next, driver.ErrSealed)
		case !n.empty && n.next >= next:
			return n.next, nil
		}
		err = s.writeRange(ctx, k, path, next, false, &a)
		if errors.Is(err, errTryAgain) {
			continue
		}
		if err != nil {
			return 0, err
		}
		return n.next, nil
	}
}
