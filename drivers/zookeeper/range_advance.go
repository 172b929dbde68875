package zookeeper

import (
	"context"
	"fmt"

	"github.com/cosid-go/store/driver"
)

// Advance raises key's next value to next (driver.RangeAdvancer): a
// compare-and-set on the version it read, as Seal does. A write whose
// outcome is unknown is read again; the raise, if applied, is then found.
func (s *rangeStore) Advance(ctx context.Context, key string, next int64) (int64, error) {
	return s.rewrite(ctx, key, func(n rangeNode) (int64, bool, bool, error) {
		switch {
		case !n.exists:
			return next, false, true, nil
		case n.sealed:
			return 0, false, false, fmt.Errorf("zookeeper: %s: sealed at %d: %w", s.rangePath(key), n.next, driver.ErrSealed)
		case !n.empty && n.next >= next:
			return 0, false, false, nil
		}
		return next, false, true, nil
	})
}
