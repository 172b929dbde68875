package store

import (
	"context"

	"github.com/cosid-go/store/driver"
)

// Range is the half-open range of values [Start, End) reserved by Next.
type Range struct {
	Start, End int64
}

// Len returns the number of values in the range.
func (r Range) Len() int64 { return r.End - r.Start }

// RangeStore reserves ranges of values per key (segment IDs), never a
// value twice; its rules are [driver.RangeStore]'s.
type RangeStore struct{ s *Store }

// Next reserves step values of key and returns them, by the rules of
// [driver.RangeStore.Next]. A step above the store's maximum
// (DefaultMaxStep unless WithMaxStep says otherwise) gives
// ErrInvalidArgument and changes nothing. Concurrent calls of one key share
// writes (see WithCoalescing).
func (r *RangeStore) Next(ctx context.Context, key string, step int64) (Range, error) {
	o := op{name: "Next", key: key, check: firstErr(checkKey("key", key), checkStep(step, r.s.maxStep))}
	return call(ctx, r.s, o, func(ctx context.Context, d driver.RangeStore) (Range, error) {
		if r.s.single {
			return nextRange(ctx, d, key, step)
		}
		return r.s.batches.next(ctx, d, key, step)
	})
}

// Current returns the next value of key and whether it is sealed, reserving
// nothing (see [driver.RangeStore.Current]).
func (r *RangeStore) Current(ctx context.Context, key string) (next int64, sealed bool, err error) {
	type current struct {
		next   int64
		sealed bool
	}
	o := op{name: "Current", key: key, check: checkKey("key", key)}
	c, err := call(ctx, r.s, o, func(ctx context.Context, d driver.RangeStore) (current, error) {
		next, sealed, err := d.Current(ctx, key)
		return current{next, sealed}, err
	})
	return c.next, c.sealed, err
}

// Seal marks key sealed and returns its final next value (see
// [driver.RangeStore.Seal]). Sealing is how a key moves to another store:
// seal it here, then Init it there at the returned value.
func (r *RangeStore) Seal(ctx context.Context, key string) (next int64, err error) {
	o := op{name: "Seal", key: key, check: checkKey("key", key)}
	return call(ctx, r.s, o, func(ctx context.Context, d driver.RangeStore) (int64, error) {
		return d.Seal(ctx, key)
	})
}

// Init creates key at the given next value, for a migration (see
// [driver.RangeStore.Init] for a key that exists already).
func (r *RangeStore) Init(ctx context.Context, key string, next int64) error {
	o := op{name: "Init", key: key, check: firstErr(checkKey("key", key), checkNext(next))}
	return callErr(ctx, r.s, o, func(ctx context.Context, d driver.RangeStore) error {
		return d.Init(ctx, key, next)
	})
}

// Keys lists every key of the store, sorted. It holds them all: a store
// of many keys is better read with All. A driver that lists in pages
// (driver.RangeLister) is read a page per call, each within the store
// timeout, so a store of any size is listed.
func (r *RangeStore) Keys(ctx context.Context) ([]string, error) {
	if _, ok := r.s.drv.(driver.RangeLister); ok {
		keys := []string{}
		for k, err := range r.All(ctx) {
			if err != nil {
				return []string{}, err
			}
			keys = append(keys, k.Key)
		}
		return keys, nil
	}
	keys, err := call(ctx, r.s, op{name: "Keys"}, func(ctx context.Context, d driver.RangeStore) ([]string, error) {
		return d.Keys(ctx)
	})
	return nonNil(keys), err
}

// Advance raises key's next value to at least next and returns the value
// it had before (the rules: [driver.RangeAdvancer.Advance]). It is how a store that
// went back (a restored backup) is put ahead of every value handed out
// since; drivers without the capability (driver.RangeAdvancer) give
// ErrUnsupported.
func (r *RangeStore) Advance(ctx context.Context, key string, next int64) (prev int64, err error) {
	o := op{name: "Advance", key: key, check: firstErr(checkKey("key", key), checkNext(next))}
	return call(ctx, r.s, o, func(ctx context.Context, d driver.RangeAdvancer) (int64, error) {
		return d.Advance(ctx, key, next)
	})
}
