package store

import (
	"context"
	"math"

	"github.com/cosid-go/store/driver"
)

// Seal seals every lock name of the store, for a migration of its locks to
// another store: from then on Lock and TryLock of any name, from any store
// on this storage, give ErrSealed, and a waiter queued before is never
// granted the lock; a holder keeps its hold, and its Unlock works. It
// returns a fence floor, at or above every lock fence the store handed
// out: raise the other store's fences past it (RaiseFences). Sealing again
// is not an error. Drivers without the capability (driver.LockSealer)
// give ErrUnsupported.
func (l *Locker) Seal(ctx context.Context) (floor int64, err error) {
	return call(ctx, l.s, op{name: "SealLocks"}, func(ctx context.Context, d driver.LockSealer) (int64, error) {
		return d.SealLocks(ctx)
	})
}

// RaiseFences makes every lock fence the store hands out later, of every
// name, above floor, a waiter's queued before included; it never lowers
// them. It moves locks in: a store
// whose locks were sealed is unsealed (the locks moving back in).
func (l *Locker) RaiseFences(ctx context.Context, floor int64) error {
	var check error
	if floor < 0 || floor == math.MaxInt64 {
		check = invalid("fence floor %d is outside [0, %d)", floor, int64(math.MaxInt64))
	}
	return callErr(ctx, l.s, op{name: "RaiseLockFences", check: check}, func(ctx context.Context, d driver.LockSealer) error {
		return d.RaiseLockFences(ctx, floor)
	})
}

// Sealed reports whether the store's locks are sealed (Seal).
func (l *Locker) Sealed(ctx context.Context) (bool, error) {
	return call(ctx, l.s, op{name: "LocksSealed"}, func(ctx context.Context, d driver.LockSealer) (bool, error) {
		return d.LocksSealed(ctx)
	})
}
