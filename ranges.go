package store

import (
	"context"
	"math"

	"github.com/cosid-go/store/driver"
)

// Range is the half-open range of values [Start, End) reserved by Next.
type Range struct {
	Start, End int64
}

// Len returns the number of values in the range.
func (r Range) Len() int64 { return r.End - r.Start }

// RangeStore reserves ranges of values per key (segment IDs). No value is
// ever returned by two calls of Next, across goroutines, processes, stores
// and faults; a value may be skipped after a fault.
type RangeStore struct{ s *Store }

func (r *RangeStore) drv() (driver.RangeStore, error) {
	d, ok := r.s.drv.(driver.RangeStore)
	if !ok {
		return nil, ErrUnsupported
	}
	return d, nil
}

// Next reserves step values of key and returns them. A key that does not
// exist yet starts at 0. A sealed key gives ErrSealed; a range that would pass
// math.MaxInt64 gives ErrExhausted and changes nothing.
func (r *RangeStore) Next(ctx context.Context, key string, step int64) (Range, error) {
	ctx, cancel, err := r.s.begin(ctx, true)
	defer cancel()
	if err == nil {
		err = checkKey("key", key)
	}
	if err == nil {
		err = checkStep(step)
	}
	var d driver.RangeStore
	if err == nil {
		d, err = r.drv()
	}
	if err != nil {
		return Range{}, wrap(ctx, "Next", key, err)
	}
	start, err := d.Next(ctx, key, step)
	if err != nil {
		return Range{}, wrap(ctx, "Next", key, r.s.closedErr(err))
	}
	if start < 0 || start > math.MaxInt64-step {
		// A driver bug must not become a duplicate downstream.
		return Range{}, wrap(ctx, "Next", key, driverBug("range start %d with step %d", start, step))
	}
	return Range{Start: start, End: start + step}, nil
}

// Current returns the next value of key and whether it is sealed, reserving
// nothing. A missing key is (0, false).
func (r *RangeStore) Current(ctx context.Context, key string) (next int64, sealed bool, err error) {
	ctx, cancel, err := r.s.begin(ctx, true)
	defer cancel()
	if err == nil {
		err = checkKey("key", key)
	}
	var d driver.RangeStore
	if err == nil {
		d, err = r.drv()
	}
	if err == nil {
		next, sealed, err = d.Current(ctx, key)
		err = r.s.closedErr(err)
	}
	return next, sealed, wrap(ctx, "Current", key, err)
}

// Seal marks key sealed and returns its final next value; sealing again is
// not an error. Sealing is how a key moves to another store: seal it here,
// then Init it there at the returned value.
func (r *RangeStore) Seal(ctx context.Context, key string) (next int64, err error) {
	ctx, cancel, err := r.s.begin(ctx, true)
	defer cancel()
	if err == nil {
		err = checkKey("key", key)
	}
	var d driver.RangeStore
	if err == nil {
		d, err = r.drv()
	}
	if err == nil {
		next, err = d.Seal(ctx, key)
		err = r.s.closedErr(err)
	}
	return next, wrap(ctx, "Seal", key, err)
}

// Init creates key at the given next value (for migration). It succeeds
// without change if the key already has that next value, and fails with
// ErrConfigMismatch if it has another.
func (r *RangeStore) Init(ctx context.Context, key string, next int64) error {
	ctx, cancel, err := r.s.begin(ctx, true)
	defer cancel()
	if err == nil {
		err = checkKey("key", key)
	}
	if err == nil {
		err = checkNext(next)
	}
	var d driver.RangeStore
	if err == nil {
		d, err = r.drv()
	}
	if err == nil {
		err = r.s.closedErr(d.Init(ctx, key, next))
	}
	return wrap(ctx, "Init", key, err)
}

// Keys lists every key of the store, sorted.
func (r *RangeStore) Keys(ctx context.Context) ([]string, error) {
	ctx, cancel, err := r.s.begin(ctx, true)
	defer cancel()
	var d driver.RangeStore
	if err == nil {
		d, err = r.drv()
	}
	var keys []string
	if err == nil {
		keys, err = d.Keys(ctx)
		err = r.s.closedErr(err)
	}
	return nonNil(keys), wrap(ctx, "Keys", "", err)
}
