package driver

import "context"

// RangeAdvancer is an optional capability of a RangeStore, for restores:
// after a store went back (a restored backup, a replica promoted without
// its last commits), raising each key past every value handed out since
// puts it ahead again. It can never make a value repeat, so a tool may
// run it on any store at any time.
type RangeAdvancer interface {
	// Advance raises key's next value to next (0 <= next <=
	// math.MaxInt64) and returns the next value it had before: a key at
	// or above next is left as it is (nothing is ever lowered), a missing
	// key is created at next (prev 0). A sealed key gives ErrSealed and
	// is not changed, whatever next is: its values continue in another
	// store. A write whose outcome is unknown is read again, so the call
	// is safe to repeat.
	Advance(ctx context.Context, key string, next int64) (prev int64, err error)
}
