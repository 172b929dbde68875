package tck

import (
	"context"
	"time"
)

// ClockStepper is an optional Harness capability: StepClock moves the clock
// that lease times come from (the store's clock, for every store of the
// harness) by d, backwards when d is negative, as a ZooKeeper leader change
// can move mtime back. The checks that need it skip when the harness lacks
// it. Any driver that reads its clock through a function it owns (an
// embedded database, an in-process state) offers it in a few lines, and
// should: it finds real bugs. Only a driver whose clock is a server's (a
// ZooKeeper mtime, a database's now()) cannot.
type ClockStepper interface {
	StepClock(ctx context.Context, d time.Duration) error
}

// ClockSetter is an optional Harness capability: SetClock stops the
// store's clock (for every store of the harness) at t, until the next
// call; time then does not pass by itself. With it the random histories
// (Explore/Histories) move time themselves and check every lease time and
// expiry exactly, boundaries included; without it they keep to ttls no
// history outlives. A driver offering ClockStepper offers this with the
// same hook.
type ClockSetter interface {
	SetClock(ctx context.Context, t time.Time) error
}

// clockStepper returns the harness's ClockStepper, or skips the check.
func (e *env) clockStepper() ClockStepper {
	e.t.Helper()
	return harnessPart[ClockStepper](e, "needs to step the store's clock back")
}
