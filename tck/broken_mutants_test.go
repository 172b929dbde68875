package tck_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/cosid-go/store/driver"
)

// Variants after mutants of real drivers that the kit missed (make
// mutants-sqlstore, mutants-zookeeper).

// pagedKeysNil lists in pages right, as the portable layer reads them, but
// its own Keys, which the portable layer then never calls, finds nothing:
// the shared SQL layer's Keys did so under a mutant.
type pagedKeysNil struct{ memDriver }

func (s pagedKeysNil) ListRanges(ctx context.Context, after string, limit int) ([]driver.KeyState, string, error) {
	return s.memDriver.(driver.RangeLister).ListRanges(ctx, after, limit)
}

func (pagedKeysNil) Keys(context.Context) ([]string, error) { return nil, nil }

// renewPurgedNotFound reports a renewal whose namespace a purge deleted as
// a missing namespace, not as a lost lease: the ZooKeeper driver did so
// under a mutant of the read of its namespace node.
type renewPurgedNotFound struct{ memDriver }

func (s renewPurgedNotFound) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	if _, err := s.memDriver.Slots(ctx, l.Namespace); errors.Is(err, driver.ErrNotFound) {
		return driver.Lease{}, fmt.Errorf("read namespace %s: %w", l.Namespace, err)
	}
	return s.memDriver.Renew(ctx, l)
}
