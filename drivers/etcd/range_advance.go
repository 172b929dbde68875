package etcd

import (
	"context"
	"fmt"

	"github.com/cosid-go/store/driver"
)

var _ driver.RangeAdvancer = (*driverStore)(nil)

// Advance raises key's next value to next (driver.RangeAdvancer): a
// compare-and-set on what it read, as Seal does. A lost answer is read
// again; the raise, if it was applied, is then found in place.
func (s *rangeStore) Advance(ctx context.Context, key string, next int64) (int64, error) {
	ctx = attempts(ctx) // failover: a cut raise is read again (attempts.go)
	return s.rewrite(ctx, key, func(m rangeMemo, exists bool) (int64, bool, bool, error) {
		switch {
		case m.sealed:
			return 0, false, false, fmt.Errorf("range key %s is sealed at %d: %w", s.rangeKey(key), m.next, driver.ErrSealed)
		case exists && m.next >= next:
			return 0, false, false, nil
		}
		return next, false, true, nil
	})
}
