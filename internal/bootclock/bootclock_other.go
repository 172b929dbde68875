//go:build !linux

package bootclock

import "time"

// Now is Go's monotonic clock, as a duration since an arbitrary origin:
// whether it counts time suspended depends on the platform.
func Now() time.Duration { return monoNow() }
