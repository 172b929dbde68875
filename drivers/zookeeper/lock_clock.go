package zookeeper

import (
	"time"

	"github.com/cosid-go/store/internal/bootclock"
)

// The clock of the lock's deadlines counts time suspended where the
// platform allows (package bootclock): the server's clock goes on while
// this machine is suspended, and a hold must not look valid after a resume
// although the server expired its session meanwhile.
//
// Timers run on Go's clock and so fire late after a suspend; the deadline
// timer therefore never waits longer than deadlineStep at a time and looks
// at this clock each time it fires.

// deadlineStep bounds how late, after a resume, the deadline timer notices
// a deadline that passed during the suspend.
const deadlineStep = bootclock.Step

// clockBase anchors the values lockNow returns.
var clockBase = bootclock.Now()

// lockNow is the lock's clock: a duration since an arbitrary origin that
// counts suspended time where the platform allows, or the clock a test set.
func (ss *lockSession) lockNow() time.Duration {
	if ss.clock != nil {
		return ss.clock()
	}
	return bootclock.Now() - clockBase
}
