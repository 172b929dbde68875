package zookeeper

import "time"

// The clock of the lock's deadlines. A hold's deadline is a span after a
// confirmation, and the server's clock goes on while this machine is
// suspended (a laptop asleep, a paused or migrated VM): the deadline must
// count that time, or a hold could look valid after a resume although the
// server expired its session meanwhile. Go's monotonic clock stops during
// a suspend on Linux, so there the deadlines read CLOCK_BOOTTIME instead
// (lock_clock_linux.go); elsewhere they use Go's monotonic clock
// (lock_clock_other.go, see the package documentation).
//
// Timers run on Go's clock and so fire late after a suspend; the deadline
// timer therefore never waits longer than deadlineStep at a time and looks
// at this clock each time it fires.

// deadlineStep bounds how late, after a resume, the deadline timer notices
// a deadline that passed during the suspend.
const deadlineStep = time.Second

// clockBase anchors the values bootNow returns.
var clockBase = bootNow()

// lockNow is the lock's clock: a duration since an arbitrary origin that
// counts suspended time where the platform allows, or the clock a test set.
func (lk *lockState) lockNow() time.Duration {
	if lk.clock != nil {
		return lk.clock()
	}
	return bootNow() - clockBase
}
