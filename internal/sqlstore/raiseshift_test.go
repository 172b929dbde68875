package sqlstore

import (
	"errors"
	"math"
	"testing"

	"github.com/cosid-go/store/driver"
)

// TestRaiseShift: a raise moves only the counter unless a waiter's fence
// is at or below its floor; then the waiters' fences go above the floor,
// keep their order, and stay below every ticket taken after the raise,
// across raises one after another.
func TestRaiseShift(t *testing.T) {
	if l, o, c, shift, err := RaiseShift(100, 7, 0, 0, 0); err != nil || shift || l != 0 || o != 0 || c != 100 {
		t.Fatalf("a raise without waiters: %d, %d, %d, %v, %v; want only the counter at 100", l, o, c, shift, err)
	}
	if _, _, c, shift, err := RaiseShift(100, 300, 0, 0, 200); err != nil || shift || c != 300 {
		t.Fatalf("a raise below every waiter: %d, %v, %v; want nothing moved", c, shift, err)
	}
	// Waiters 3 and 5 of one name, the counter at 7: raised to 1000.
	last, off, counter, shift, err := RaiseShift(1000, 7, 0, 0, 3)
	if err != nil || !shift {
		t.Fatalf("a raise above a waiter: %v, %v; want a shift", shift, err)
	}
	f3, f5, next := RaisedFence(3, last, off), RaisedFence(5, last, off), RaisedFence(counter+1, last, off)
	if !(1000 < f3 && f3 < f5 && f5 < next) {
		t.Fatalf("fences after the raise: waiters %d, %d, the next ticket %d; want above 1000 and growing", f3, f5, next)
	}
	// Waiter 5 and the next ticket queued behind it, raised again to 5000.
	last, off, counter2, shift, err := RaiseShift(5000, counter+1, last, off, 5)
	if err != nil || !shift {
		t.Fatalf("a second raise: %v, %v; want a shift", shift, err)
	}
	g5, gNext, after := RaisedFence(5, last, off), RaisedFence(counter+1, last, off), RaisedFence(counter2+1, last, off)
	if !(5000 < g5 && f5 <= g5 && g5 < gNext && gNext < after) {
		t.Fatalf("fences after the second raise: %d, %d, the next ticket %d (before: %d); want above 5000, never lower, growing", g5, gNext, after, f5)
	}
	if _, _, _, _, err := RaiseShift(math.MaxInt64-1, 10, 0, 0, 1); !errors.Is(err, driver.ErrExhausted) {
		t.Fatalf("a raise whose fences would pass the largest int64: %v; want ErrExhausted", err)
	}
}
