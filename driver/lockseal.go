package driver

import "context"

// LockSealer is an optional capability of a Locker, for migrations: the
// locks of a store that moved to another are sealed in the old one, so an
// instance left on it cannot hold a lock beside the new store's holder,
// and the new store's fences continue above the old one's, so a resource
// that keeps the highest fence it saw never refuses the new holders or
// accepts a stale one.
//
// The seal is store-wide (every name, those never used included): a
// driver may forget unused names (Locks), so sealing only the names it
// lists would leave a forgotten one open.
type LockSealer interface {
	// SealLocks seals every lock name of the store and returns a fence
	// floor: at or above every lock fence the store handed out or queued,
	// of every name, by every store sharing the storage. From then on a
	// Lock of any name, waiting or not, by any store, gives ErrSealed and
	// queues nothing; a waiter queued before the seal is never granted
	// the lock and returns ErrSealed, no later than when it would have
	// been granted. A holder at the seal keeps its hold (its Lost as
	// before) and its Unlock works. Sealing again is not an error and
	// returns a floor at least as high. Only RaiseLockFences undoes the
	// seal (the locks moving back in); a purge keeps it.
	SealLocks(ctx context.Context) (floor int64, err error)

	// RaiseLockFences makes every lock fence handed out later, of every
	// name and by every store sharing the storage, above floor (0 <=
	// floor < math.MaxInt64): a waiter queued before the raise and
	// granted after it too, with a fence above floor rather than the one
	// Waiters showed when it queued (still above its predecessors', in
	// queue order). Nothing is lowered, so raising again, or
	// below the fences already handed out, changes nothing. "Later" is
	// after the raise returned: a Lock or TryLock that overlaps it and
	// reached the head of its queue before it may hold a fence from
	// before the raise, so lock takers start once it has returned (as the
	// migrate and restore procedures have them do). It is how
	// locks move in: a store whose locks were sealed (moved out before)
	// is unsealed by it, the locks moving back in.
	RaiseLockFences(ctx context.Context, floor int64) error

	// LocksSealed reports whether SealLocks sealed the store's locks.
	LocksSealed(ctx context.Context) (bool, error)
}
