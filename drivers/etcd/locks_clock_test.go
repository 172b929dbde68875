package etcd

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/bootclock"
)

// TestLockSuspendCounted: a suspend longer than the session's TTL, which
// the lock clock counts (CLOCK_BOOTTIME) while Go's timers and monotonic
// clock stand still, loses the hold within bootclock.Step of the resume,
// without waiting for the next keep-alive (a third of the TTL, 20s here).
// The suspend is a jump of the store's lock clock.
func TestLockSuspendCounted(t *testing.T) {
	ctx := t.Context()
	var suspended atomic.Int64
	st := openDriver(t, freshPrefix("suspend"), func(d *driverStore) {
		d.clock = func() time.Duration { return bootclock.Now() + time.Duration(suspended.Load()) }
	})
	l, err := st.Locks().Lock(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	lost := l.Lost()
	select {
	case <-lost:
		t.Fatal("lost before the suspend")
	default:
	}
	suspended.Store(int64(2 * time.Minute)) // the session TTL is 60s
	select {
	case <-lost:
	case <-time.After(3 * bootclock.Step):
		t.Fatalf("a suspend of 2m not counted: Lost still open %v after the resume", 3*bootclock.Step)
	}
}
