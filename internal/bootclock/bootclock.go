// Package bootclock is the clock of lock deadlines. A hold's deadline is a
// span after a confirmation from the server, whose clock goes on while this
// machine is suspended (a laptop asleep, a paused or migrated VM): the
// deadline must count that time, or a hold could look valid after a resume
// although the server expired its session meanwhile. Go's monotonic clock
// stops during a suspend on Linux, so there Now reads CLOCK_BOOTTIME
// (bootclock_linux.go); elsewhere it is Go's monotonic clock, which counts
// suspended time or not depending on the platform.
//
// Timers run on Go's clock and so fire late after a suspend: a deadline
// timer should wait at most Step at a time and read Now each time it fires.
package bootclock

import "time"

// Step bounds how late, after a resume, a deadline timer that waits at
// most Step at a time notices a deadline that passed during the suspend.
const Step = time.Second

// monoBase anchors the fallback clock.
var monoBase = time.Now()

func monoNow() time.Duration { return time.Since(monoBase) }
