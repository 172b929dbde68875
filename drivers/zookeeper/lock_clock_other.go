//go:build !linux

package zookeeper

import "time"

// bootNow is Go's monotonic clock: whether it counts time suspended
// depends on the platform (see the package documentation).
func bootNow() time.Duration { return monoNow() }
