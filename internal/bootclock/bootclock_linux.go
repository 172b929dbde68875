//go:build linux

package bootclock

import (
	"time"

	"golang.org/x/sys/unix"
)

// Now reads CLOCK_BOOTTIME: monotonic, and counting time suspended, as a
// duration since an arbitrary origin. Should the kernel lack it (before
// Linux 2.6.39), Go's monotonic clock is used from the start; a kernel
// that answered once keeps answering.
func Now() time.Duration {
	var ts unix.Timespec
	if bootOK && unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) == nil {
		return time.Duration(ts.Nano())
	}
	return monoNow()
}

var bootOK = func() bool {
	var ts unix.Timespec
	return unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) == nil
}()
