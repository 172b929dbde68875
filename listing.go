package store

import (
	"context"
	"fmt"
	"iter"

	"github.com/cosid-go/store/driver"
)

// DefaultListPage is the number of entries All reads with one driver
// call unless WithListPage says otherwise: the most a listing holds at
// once, whatever the number of keys or locks.
const DefaultListPage = 1000

// WithListPage sets the number of entries All reads with one driver call
// (default DefaultListPage): fewer round trips with a larger page, less
// memory and a shorter call with a smaller one.
func WithListPage(n int) Option {
	return func(s *Store) error {
		if n < 1 {
			return invalid("list page %d is less than 1", n)
		}
		s.listPage = n
		return nil
	}
}

// KeyInfo is a range key and its state, as RangeStore.All lists them.
type KeyInfo struct {
	Key    string
	Next   int64 // the next value Next would hand out
	Sealed bool
}

// All lists every key of the store with its state, sorted, a page of
// WithListPage keys at a time: a store of any size is listed in constant
// memory. Each page is one operation within the store timeout. Every key
// that exists for the whole listing is listed exactly once, in order; a
// key created or deleted meanwhile may be listed or not. An error ends the
// listing: it is yielded once, with a zero KeyInfo. Drivers without paging
// (driver.RangeLister) are listed with Keys, then Current of each key.
//
//	for k, err := range st.Ranges().All(ctx) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(k.Key, k.Next, k.Sealed)
//	}
func (r *RangeStore) All(ctx context.Context) iter.Seq2[KeyInfo, error] {
	return func(yield func(KeyInfo, error) bool) {
		if _, ok := r.s.drv.(driver.RangeLister); !ok {
			r.allByKeys(ctx, yield)
			return
		}
		pages(ctx, r.s, "ListRanges", func(k KeyInfo) string { return k.Key },
			func(ctx context.Context, d driver.RangeLister, after string) ([]KeyInfo, string, error) {
				ks, next, err := d.ListRanges(ctx, after, r.s.listPage)
				return convert(ks, func(k driver.KeyState) KeyInfo { return KeyInfo(k) }), next, err
			}, yield)
	}
}

// allByKeys is All for a driver without RangeLister.
func (r *RangeStore) allByKeys(ctx context.Context, yield func(KeyInfo, error) bool) {
	keys, err := r.Keys(ctx)
	if err != nil {
		yield(KeyInfo{}, err)
		return
	}
	for _, k := range keys {
		next, sealed, err := r.Current(ctx, k)
		if err != nil {
			yield(KeyInfo{}, err)
			return
		}
		if !yield(KeyInfo{Key: k, Next: next, Sealed: sealed}, nil) {
			return
		}
	}
}

// All lists the lock names List lists, sorted, a page of WithListPage names
// at a time, as RangeStore.All lists keys. Drivers without paging
// (driver.LockLister) are listed with List.
func (l *Locker) All(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		if _, ok := l.s.drv.(driver.LockLister); !ok {
			names, err := l.List(ctx)
			if err != nil {
				yield("", err)
				return
			}
			for _, n := range names {
				if !yield(n, nil) {
					return
				}
			}
			return
		}
		pages(ctx, l.s, "ListLocks", func(n string) string { return n },
			func(ctx context.Context, d driver.LockLister, after string) ([]string, string, error) {
				names, err := d.ListLocks(ctx, after, l.s.listPage)
				next := ""
				if len(names) == l.s.listPage { // a short page is the end
					next = names[len(names)-1]
				}
				return names, next, err
			}, yield)
	}
}

// pages reads pages of a driver listing, each after where the one before
// said the listing goes on (next), until it says the end (""), and yields
// their entries. It refuses a page that is not above the one before and
// in order, or does not move on: a driver listing the same entry twice
// would make a caller count or move it twice, one that stays in place
// would never end.
func pages[D, T any](ctx context.Context, s *Store, name string, keyOf func(T) string,
	page func(context.Context, D, string) ([]T, string, error), yield func(T, error) bool) {
	var zero T
	after, last, first := "", "", true
	for {
		type result struct {
			got  []T
			next string
		}
		r, err := call(ctx, s, op{name: name, key: after}, func(ctx context.Context, d D) (result, error) {
			got, next, err := page(ctx, d, after)
			return result{got, next}, err
		})
		if err != nil {
			yield(zero, err)
			return
		}
		if len(r.got) > s.listPage {
			yield(zero, &Error{Op: name, Key: after, Err: fmt.Errorf("%w: the driver returned %d entries for a page of %d",
				ErrCorrupt, len(r.got), s.listPage)})
			return
		}
		for _, v := range r.got {
			k := keyOf(v)
			if !first && k <= last || k <= after && after != "" {
				yield(zero, &Error{Op: name, Key: after, Err: fmt.Errorf("%w: the driver listed %q after %q",
					ErrCorrupt, k, max(last, after))})
				return
			}
			last, first = k, false
			if !yield(v, nil) {
				return
			}
		}
		if r.next == "" {
			return
		}
		if r.next <= after || r.next < last {
			yield(zero, &Error{Op: name, Key: after, Err: fmt.Errorf("%w: the driver's page after %q goes on at %q, not above it",
				ErrCorrupt, max(last, after), r.next)})
			return
		}
		after = r.next
	}
}
