package bootclock

import (
	"testing"
	"time"
)

// TestNowFollowsTime: Now never goes back and advances as Go's clock does
// (no suspend happens during a test).
func TestNowFollowsTime(t *testing.T) {
	start := time.Now()
	a := Now()
	time.Sleep(20 * time.Millisecond) // the span measured, not a synchronisation
	b := Now()
	took := time.Since(start)
	if d := b - a; d < 20*time.Millisecond || d > took+time.Millisecond {
		t.Fatalf("Now advanced %v over %v of Go's clock", d, took)
	}
}
