// Package memfault lets the kit's self-tests give the memory driver a bug
// that needs its state. A broken variant in package tck's tests wraps a
// memory store and, in the one method it breaks, reads and writes the
// state under its mutex through the view the memory driver offers here,
// rather than through a copy of the driver. Only tests use it; the type
// of its view is internal, so no code outside this module can name it.
package memfault

import (
	"context"
	"fmt"
	"time"

	"github.com/cosid-go/store/driver"
)

// State is a memory state, its mutex held.
type State interface {
	// Clock is the state's clock, in milliseconds since the epoch; Now is
	// its reading; SetClock replaces it.
	Clock() func() int64
	Now() int64
	SetClock(now func() int64)
	// Namespace is the namespace as Acquire opens it: created with want's
	// settings if missing; ErrSealed if sealed, ErrConfigMismatch if its
	// settings differ from want's.
	Namespace(want driver.Namespace) (Space, error)
	// Space is the namespace called name, if there is one.
	Space(name string) (Space, bool)
	Spaces() []string
	Ranges() []string
	SetRangeSealed(key string, sealed bool)
	// LockFence is the last lock fence handed out.
	LockFence() int64
	// SetSlotFenceFloor sets the fence above which the slots of
	// namespaces created later start (a purge raises it).
	SetSlotFenceFloor(floor int64)
}

// Space is one namespace of a State.
type Space interface {
	Limit() int
	Tolerance() time.Duration
	Sealed() bool
	SetSealed(sealed bool)
	// Slot is slot n's record; a slot never used has only the fence floor.
	Slot(n int) driver.SlotRecord
	// Slots is a copy of the used slots' records.
	Slots() map[int]driver.SlotRecord
	SetSlot(n int, r driver.SlotRecord)
	// Owners is the owner index's entry of key: the slots it held last,
	// most recent first.
	Owners(key string) []int
	SetOwners(key string, slots []int)
}

// editor is what a memory store offers.
type editor interface {
	EditState(ctx context.Context, f func(State) error) error
}

// Edit runs f on the state of s, a memory store (not a wrapper of one),
// under the state's mutex: ErrClosed if s is closed, ctx's error if ctx
// has ended, else f's error.
func Edit(ctx context.Context, s driver.Store, f func(State) error) error {
	e, ok := s.(editor)
	if !ok {
		return fmt.Errorf("memfault: %T is not a memory store", s)
	}
	return e.EditState(ctx, f)
}
