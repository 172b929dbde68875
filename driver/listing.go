package driver

import "context"

// KeyState is one range key as a RangeLister lists it: its next value and
// seal as RangeStore.Current would give them at the time of the read.
type KeyState struct {
	Key    string
	Next   int64
	Sealed bool
}

// RangeLister is an optional capability of a RangeStore: its keys listed
// a page at a time, so that a store with many keys is listed, and each of
// its keys read, without the store, the driver or the caller ever holding
// them all (RangeStore.Keys does). The portable layer calls it page after
// page, each call within the store timeout.
type RangeLister interface {
	// ListRanges returns the existing keys above after (bytewise; "" from
	// the first key), sorted bytewise, at most limit of them (limit >= 1),
	// each with its state as one read of the key saw it. Fewer than limit
	// means the listing reached its end: no key above the last one
	// returned existed at the read. Existing is as for Keys: a key one
	// Next, Seal or Init created; nothing else is listed. A key whose data
	// does not parse fails the page with ErrCorrupt rather than be left
	// out. A key created or deleted between two pages may be listed or
	// not; every key that exists from the first page to the last is
	// listed exactly once, since pages follow each other by key.
	ListRanges(ctx context.Context, after string, limit int) ([]KeyState, error)
}

// LockLister is an optional capability of a Locker: the lock names that
// Locks lists, a page at a time.
type LockLister interface {
	// ListLocks returns the names Locks would list that are above after
	// (bytewise; "" from the first), sorted bytewise, at most limit of
	// them (limit >= 1). Fewer than limit means the listing reached its
	// end. As for ListRanges, a name listed by Locks from the first page
	// to the last is listed exactly once.
	ListLocks(ctx context.Context, after string, limit int) ([]string, error)
}
