package tck_test

import (
	"context"

	"github.com/cosid-go/store/driver"
)

// Variants of a RangeLister's next (driver.RangeLister): pages that stop
// short at a budget pass; pages that do not move on are caught.
func init() {
	variants = append(variants,
		variant{name: "pages-short", checks: []string{"Ranges/ListPages", "Ranges/Keys"},
			suite: wrapSuite(func(s memDriver) driver.Store { return pagesShort{s} })},
		variant{name: "pages-stay", checks: []string{"Ranges/ListPages"}, broken: true,
			suite: wrapSuite(func(s memDriver) driver.Store { return pagesStay{s} })})
}

// pagesShort stops every page after one key, as a driver at its work
// budget does, and says where it goes on: right.
type pagesShort struct{ memDriver }

func (s pagesShort) ListRanges(ctx context.Context, after string, _ int) ([]driver.KeyState, string, error) {
	return s.memDriver.(driver.RangeLister).ListRanges(ctx, after, 1) // a full page of 1: next is its key
}

// pagesStay gives every page after the first nothing, and the same place
// to go on from: a listing that never ends.
type pagesStay struct{ memDriver }

func (s pagesStay) ListRanges(ctx context.Context, after string, limit int) ([]driver.KeyState, string, error) {
	if after != "" {
		return nil, after, nil
	}
	return s.memDriver.(driver.RangeLister).ListRanges(ctx, after, limit)
}
