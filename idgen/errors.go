package idgen

import (
	"errors"
	"fmt"

	"github.com/cosid-go/store"
)

// Errors, for errors.Is. Each error a generator returns wraps one of these
// (and, where a store call failed, the store's error too).
var (
	// ErrLeaseLost: the session's lease is gone (another holder took the
	// slot, or it could not be renewed before it would expire). It also
	// satisfies errors.Is(err, store.ErrLeaseLost). A lost session stays
	// lost: open a new one.
	ErrLeaseLost error = &wrapped{"idgen: lease lost", store.ErrLeaseLost}

	// ErrClockBackwards: the clock is behind the timestamps the Snowflake
	// may issue (it stepped back below the last one issued, or it is below
	// the floor the slot's previous holder left) by more than MaxWait.
	ErrClockBackwards = errors.New("idgen: clock is behind the timestamps the generator may issue")

	// ErrCeiling: the next timestamp would reach the lease's ceiling, and
	// no renewal raised it within MaxWait.
	ErrCeiling = errors.New("idgen: timestamps reached the lease's ceiling")

	// ErrTimestampOverflow: the timestamp no longer fits the layout's
	// timestamp bits (the layout's lifetime is over).
	ErrTimestampOverflow = errors.New("idgen: timestamp does not fit the layout")

	// ErrNoRange: a Segment has no value left and the store did not
	// provide a new range; the store's error is wrapped with it (which is
	// store.ErrUnavailable only when no server answered).
	ErrNoRange = errors.New("idgen: no value left and the store provided no range")

	// ErrInUse: the lease NewSession acquired is already held by a live
	// session of this process (same store incarnation and owner). Give each
	// generator its own owner key.
	ErrInUse = errors.New("idgen: lease already held by a session of this process")

	// ErrClosed: the generator or session was closed. It also satisfies
	// errors.Is(err, store.ErrClosed), as a closed store's calls do.
	ErrClosed error = &wrapped{"idgen: closed", store.ErrClosed}
)

// wrapped is a sentinel with its own message that also matches a store
// sentinel, so callers can test for either.
type wrapped struct {
	msg  string
	base error
}

func (e *wrapped) Error() string { return e.msg }
func (e *wrapped) Unwrap() error { return e.base }

// invalid reports a bad option as store.ErrInvalidArgument, like the store
// does for its own arguments.
func invalid(format string, args ...any) error {
	return fmt.Errorf("idgen: "+format+": %w", append(args, store.ErrInvalidArgument)...)
}
