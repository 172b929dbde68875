package driver

import (
	"errors"
	"strings"
	"testing"
)

// TestSlotIssuing: a term not released holds the slot against a purge
// until its ceiling, past its expiry: its holder may have issued up to the
// ceiling. A released term holds nothing.
func TestSlotIssuing(t *testing.T) {
	r := SlotRecord{Owner: "a", Incarnation: "i", Fence: 3, TTL: 1000, Tolerance: 500, Floor: 100, Written: 10_000}
	// ExpiresAt 11 000, Ceiling 11 500.
	for _, c := range []struct {
		now  int64
		want bool
	}{{10_000, true}, {11_000, true}, {11_499, true}, {11_500, false}, {20_000, false}} {
		if got := r.Issuing(c.now); got != c.want {
			t.Errorf("Issuing(%d) of a term with expiry %d and ceiling %d = %v, want %v", c.now, r.ExpiresAt(), r.Ceiling(), got, c.want)
		}
		err := r.PurgeRefusal("workers", 7, c.now)
		if c.want != (err != nil) || err != nil && (!errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "workers/7") ||
			!strings.Contains(err.Error(), "11500")) {
			t.Errorf("PurgeRefusal at %d = %v, want ErrLocked naming workers/7 and the ceiling 11500: %v", c.now, err, c.want)
		}
	}
	released := r
	released.Owner, released.Incarnation = "", ""
	if released.Issuing(10_000) || released.PurgeRefusal("workers", 7, 10_000) != nil {
		t.Error("a released term holds the slot against a purge")
	}
}
