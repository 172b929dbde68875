package tck

import (
	"context"
	"time"
)

// ClockStepper is an optional Harness capability: StepClock moves the clock
// that lease times come from (the store's clock, for every store of the
// harness) by d, backwards when d is negative, as a ZooKeeper leader change
// can move mtime back. The checks that need it skip when the harness lacks
// it; a driver whose clock is a server's wall clock cannot offer it.
type ClockStepper interface {
	StepClock(ctx context.Context, d time.Duration) error
}

// clockStepper returns the harness's ClockStepper, or skips the check.
func (e *env) clockStepper() ClockStepper {
	e.t.Helper()
	cs, ok := e.h.(ClockStepper)
	if !ok {
		e.t.Skipf("the harness (%T) does not implement the optional tck.ClockStepper: "+
			"this check needs to step the store's clock back", e.h)
	}
	return cs
}
