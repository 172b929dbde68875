package tck_test

import (
	"context"

	"github.com/cosid-go/store/driver"
)

// pagedKeysNil lists in pages right, as the portable layer reads them, but
// its own Keys, which the portable layer then never calls, finds nothing:
// the shared SQL layer's Keys did so under a mutant (make mutants-sqlstore).
type pagedKeysNil struct{ memDriver }

func (s pagedKeysNil) ListRanges(ctx context.Context, after string, limit int) ([]driver.KeyState, error) {
	return s.memDriver.(driver.RangeLister).ListRanges(ctx, after, limit)
}

func (pagedKeysNil) Keys(context.Context) ([]string, error) { return nil, nil }
