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
// page, each call within the store timeout, until next is "".
type RangeLister interface {
	// ListRanges returns the existing keys above after (bytewise; "" from
	// the first key), sorted bytewise, at most limit of them (limit >= 1),
	// each with its state as one read of the key saw it, and next: where
	// the listing goes on (the after of the next call), or "" when it
	// reached its end: no key above the last one returned existed at the
	// read. next is above after and at or above the last key returned; it
	// need not be a key. A page may stop short of limit, with next, at a
	// work budget of the driver's own (a tree store walking a deep key),
	// so that each page stays within the store timeout; a driver whose
	// pages stop only at limit returns NextAfter(page, limit).
	// Existing is as for Keys: a key one Next, Seal or Init created;
	// nothing else is listed. A key whose data does not parse fails the
	// page with ErrCorrupt rather than be left out. A key created or
	// deleted between two pages may be listed or not; every key that
	// exists from the first page to the last is listed exactly once, since
	// pages follow each other by key.
	ListRanges(ctx context.Context, after string, limit int) (page []KeyState, next string, err error)
}

// NextAfter is the next of a ListRanges page that stops only at limit:
// its last key when it is full, "" (the end) when it is short.
func NextAfter(page []KeyState, limit int) string {
	if len(page) == 0 || len(page) < limit {
		return ""
	}
	return page[len(page)-1].Key
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
