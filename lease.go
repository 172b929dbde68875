package store

import (
	"time"

	"github.com/cosid-go/store/driver"
)

// The slot types are the store's own, converted from and to the driver's
// at the boundary, so a driver's state stays out of the user's hands.

// Namespace names a set of slots 0..Limit-1 and its clock tolerance, fixed
// when the namespace is first used (see [driver.Namespace]).
type Namespace struct {
	Name      string        // a single path segment
	Limit     int           // slots 0..Limit-1, at most MaxSlots
	Tolerance time.Duration // clock tolerance between expiry and ceiling, whole milliseconds
	// Sealed is reported by Namespaces for a namespace sealed by
	// SlotLeaseStore.Seal. Acquire and Seed ignore it: only Seal seals.
	Sealed bool
}

// Lease is one term of one slot. Times are milliseconds since the Unix epoch
// in the store's clock. The holder may issue timestamps t with
// Floor <= t < Ceiling, and stops when its clock reaches ExpiresAt.
//
// A Lease also carries the driver's state of the term (a node version,
// say), which Renew and Release hand back to the driver to save a round
// trip. A Lease rebuilt from its exported fields has none: the built-in
// drivers then read the slot first.
type Lease struct {
	Namespace   string
	Slot        int    // the worker ID
	Owner       string // the owner key: survives restarts
	Incarnation string // the run of the owner that holds the term
	Fence       int64  // grows by one with each term of the slot
	TTL         time.Duration
	Tolerance   time.Duration
	Floor       int64 // the first timestamp the holder may issue
	ExpiresAt   int64 // the holder stops issuing when its clock reaches this
	Ceiling     int64 // every timestamp of the term stays below this

	state any // the driver's own, handed back on Renew and Release
}

// SlotInfo describes one used slot (for tools).
type SlotInfo struct {
	Slot        int
	Owner       string // empty when released
	Incarnation string
	LastOwner   string // the owner of the last term that ended
	Fence       int64
	TTL         time.Duration
	Tolerance   time.Duration
	Floor       int64
	ExpiresAt   int64
	Ceiling     int64
	NextFloor   int64 // the floor of the next term after a release
}

// The conversions of identical struct types are plain Go conversions, so a
// field added on one side only fails to compile instead of being dropped.

func (ns Namespace) toDriver() driver.Namespace {
	d := driver.Namespace(ns)
	d.Sealed = false // a request never seals (see Namespace.Sealed)
	return d
}

func slotInfoOf(si driver.SlotInfo) SlotInfo { return SlotInfo(si) }

func namespaceOf(ns driver.Namespace) Namespace { return Namespace(ns) }

func leaseOf(l driver.Lease) Lease {
	return Lease{
		Namespace:   l.Namespace,
		Slot:        l.Slot,
		Owner:       l.Owner,
		Incarnation: l.Incarnation,
		Fence:       l.Fence,
		TTL:         l.TTL,
		Tolerance:   l.Tolerance,
		Floor:       l.Floor,
		ExpiresAt:   l.ExpiresAt,
		Ceiling:     l.Ceiling,
		state:       l.State,
	}
}

func (l Lease) toDriver() driver.Lease {
	return driver.Lease{
		Namespace:   l.Namespace,
		Slot:        l.Slot,
		Owner:       l.Owner,
		Incarnation: l.Incarnation,
		Fence:       l.Fence,
		TTL:         l.TTL,
		Tolerance:   l.Tolerance,
		Floor:       l.Floor,
		ExpiresAt:   l.ExpiresAt,
		Ceiling:     l.Ceiling,
		State:       l.state,
	}
}

// convert converts a driver's listing; the result is never nil, so callers
// and JSON output see [] for "nothing".
func convert[D, S any](in []D, f func(D) S) []S {
	out := make([]S, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
