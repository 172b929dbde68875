// Package driver defines the interfaces a store driver implements.
//
// Users never see these types: they use package store, which wraps a driver,
// validates every argument, applies the store-wide timeout and wraps errors
// once. A driver may therefore assume that every key, namespace, owner, step,
// ttl and slot it is given is valid (see package store for the rules), and it
// returns raw errors: the sentinel errors below, context errors, or its own.
//
// A driver implements Store and, for each capability it has, RangeStore,
// SlotStore or Locker. A capability it lacks makes the user's call fail with
// ErrUnsupported. The rules stated on each method are the ones the
// conformance kit (package tck) checks.
package driver

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors. Package store re-exports them; drivers return them
// (possibly wrapped) and the portable layer adds the operation and key.
var (
	ErrSealed          = errors.New("sealed")
	ErrExhausted       = errors.New("exhausted")
	ErrLeaseLost       = errors.New("lease lost")
	ErrInvalidArgument = errors.New("invalid argument")
	ErrCorrupt         = errors.New("corrupt data")
	ErrRecreated       = errors.New("node was deleted or recreated")
	ErrConfigMismatch  = errors.New("configuration mismatch")
	ErrUnsupported     = errors.New("unsupported by this driver")
	ErrClosed          = errors.New("store closed")
	ErrLocked          = errors.New("held by another") // a lock, or a slot with a live term
	ErrNotFound        = errors.New("not found")
)

// Factory opens a store from a map of options. It must reject an unknown
// option key with an error naming it, and a malformed value with an error
// naming the key and the value (see Options).
type Factory func(options map[string]string) (Store, error)

// Store is an open driver store. It must also implement at least one of
// RangeStore, SlotStore and Locker.
type Store interface {
	// Close ends every goroutine and connection the store started. Calls
	// made after Close are refused by the portable layer; a driver needs
	// only to make calls in flight return promptly.
	Close() error
}

// RangeStore hands out ranges of int64 values per key.
type RangeStore interface {
	// Next reserves step values of key and returns the first, start: the
	// range is [start, start+step). A missing key starts at 0. No value is
	// ever returned twice, across stores sharing storage and across faults.
	// A sealed key gives ErrSealed; an allocation past math.MaxInt64 gives
	// ErrExhausted and changes nothing.
	Next(ctx context.Context, key string, step int64) (start int64, err error)

	// Current returns the next value of key and whether it is sealed,
	// reserving nothing. A missing key is (0, false).
	Current(ctx context.Context, key string) (next int64, sealed bool, err error)

	// Seal marks key sealed and returns its final next value. Sealing a
	// sealed key is not an error and returns the same value. A missing key
	// is sealed at 0.
	Seal(ctx context.Context, key string) (next int64, err error)

	// Init creates key with the given next value. If the key exists at the
	// same next value (sealed or not), Init succeeds and changes nothing;
	// at a different value it fails with ErrConfigMismatch.
	Init(ctx context.Context, key string, next int64) error

	// Keys lists every existing key, sorted.
	Keys(ctx context.Context) ([]string, error)
}

// Namespace holds the settings of a slot namespace. They are fixed when
// the namespace is first created.
type Namespace struct {
	Name      string
	Limit     int           // slots 0..Limit-1
	Tolerance time.Duration // clock tolerance added to expiry to form the ceiling
}

// AcquireRequest asks for one slot of a namespace.
type AcquireRequest struct {
	Namespace   Namespace
	Owner       string        // owner key: survives restarts
	Incarnation string        // one run of the owner
	TTL         time.Duration // whole milliseconds, > 0
	Preferred   int           // tried after the owner's last slots; always < Limit
	Reclaim     bool          // may take over a live term of the same owner, other incarnation
}

// Lease is one term of one slot. Times are milliseconds since the Unix
// epoch in the store's clock.
type Lease struct {
	Namespace   string
	Slot        int
	Owner       string
	Incarnation string
	Fence       int64
	TTL         time.Duration
	Tolerance   time.Duration
	Floor       int64 // first timestamp the holder may issue
	ExpiresAt   int64 // the holder stops issuing when its clock reaches this
	Ceiling     int64 // timestamps stay below this

	// State is the driver's own (a version, say); the portable layer hands
	// it back unchanged on Renew and Release.
	State any
}

// SlotInfo describes one used slot, for tools.
type SlotInfo struct {
	Slot        int
	Owner       string // empty when released
	Incarnation string
	LastOwner   string // owner of the last term that ended
	Fence       int64
	TTL         time.Duration
	Tolerance   time.Duration
	Floor       int64
	ExpiresAt   int64
	Ceiling     int64
	NextFloor   int64 // the floor of the next term after a release
}

// SlotStore leases worker slots.
type SlotStore interface {
	// Acquire creates the namespace if it is missing (ErrConfigMismatch if
	// it exists with another Limit or Tolerance) and leases a slot, chosen
	// in this order: the owner's last slots, the preferred slot, the lowest
	// free slot. A live term of the same owner and incarnation is returned
	// as it is. With no free slot: ErrExhausted. The new term's fence is the
	// previous term's plus one (1 for a slot never used); its floor is 0 for
	// a never-used slot, the old next floor after a release, and
	// max(old next floor, old ceiling) after an expiry or a reclaim.
	Acquire(ctx context.Context, req AcquireRequest) (Lease, error)

	// Renew extends the term; ExpiresAt and Ceiling never decrease. If the
	// slot holds another term (or none): ErrLeaseLost.
	Renew(ctx context.Context, l Lease) (Lease, error)

	// Release ends the term. used is the highest timestamp issued, or -1
	// when unknown; the next floor becomes clamp(used+1, Floor, Ceiling),
	// or Ceiling when unknown. A term that is no longer the slot's gives
	// ErrLeaseLost.
	Release(ctx context.Context, l Lease, used int64) error

	// Namespaces lists every namespace, sorted by name.
	Namespaces(ctx context.Context) ([]Namespace, error)

	// Slots lists every used slot of a namespace, by slot number; a
	// missing namespace gives ErrNotFound.
	Slots(ctx context.Context, ns string) ([]SlotInfo, error)
}

// Locker gives fair, exclusive, named locks.
type Locker interface {
	// Lock waits until name is held by the caller or ctx ends. Waiters get
	// the lock in arrival order. A waiter whose context ends leaves no
	// trace and does not block the next. With wait false it never waits and
	// returns ErrLocked if another holds or waits for the lock. owner is
	// recorded for tools.
	Lock(ctx context.Context, name, owner string, wait bool) (Lock, error)

	// Locks lists the names of every lock that has ever been taken, sorted.
	Locks(ctx context.Context) ([]string, error)

	// Waiters lists a lock's holder and waiters in lock order (the holder
	// first). A name never used gives ErrNotFound.
	Waiters(ctx context.Context, name string) ([]Waiter, error)
}

// Lock is a held lock.
type Lock interface {
	// Unlock releases the lock; only the caller's own hold is removed.
	// A second call returns nil. After the hold was lost it reports
	// ErrLeaseLost.
	Unlock(ctx context.Context) error
	// Fence grows with each holder of the name and never wraps.
	Fence() int64
	// Lost is closed as soon as the holder can no longer be sure it holds
	// the lock, and when the store closes. Unlock does not close it.
	Lost() <-chan struct{}
}

// Waiter is one holder or waiter of a lock.
type Waiter struct {
	Owner string
	Fence int64
}

// SlotSeeder is an optional capability of a SlotStore, for migrations
// between stores: it carries a slot's history so that the slot's next term
// stays above every timestamp and fence of the terms in the old store.
type SlotSeeder interface {
	// SeedSlot creates the namespace if it is missing (ErrConfigMismatch if
	// it exists with other settings) and raises slot's history: its fence
	// becomes at least fence and its next floor at least nextFloor; nothing
	// is lowered, so seeding again is harmless. A slot with a live term gives
	// ErrLocked and is not changed.
	SeedSlot(ctx context.Context, ns Namespace, slot int, fence, nextFloor int64) error
}

// Purger is an optional capability: it deletes everything the store keeps
// (for ZooKeeper, every node under the root), for an operator who stopped
// every instance. It returns what it deleted, in a readable form.
type Purger interface {
	Purge(ctx context.Context) (deleted []string, err error)
}
