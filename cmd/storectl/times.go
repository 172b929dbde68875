package main

import (
	"fmt"
	"time"

	"github.com/cosid-go/store"
)

// Slot states, as inspect shows them.
const (
	stateLive     = "live"     // a term whose expiry is ahead
	stateExpired  = "expired"  // a term past its expiry and never released
	stateReleased = "released" // no term: released, or seeded by a migration
)

// slotState judges a slot against now, the local clock. It is for display:
// the safety checks use mayBeInUse.
func slotState(s store.SlotInfo, now int64) string {
	switch {
	case s.Owner == "":
		return stateReleased
	case now < s.ExpiresAt:
		return stateLive
	}
	return stateExpired
}

// mayBeInUse reports whether a slot's holder may still issue timestamps.
// It waits for the ceiling rather than the expiry: the lease times are in
// the store's clock and the holder stops by its own, and the namespace's
// tolerance is how far those clocks may disagree.
func mayBeInUse(s store.SlotInfo, now int64) bool {
	return s.Owner != "" && now < s.Ceiling
}

// stamp formats a time in milliseconds as RFC 3339 in UTC with
// milliseconds, and how far it is from now ("in 12s", "3m ago"). Zero is
// the floor of a slot's first term: printed as is, not as 1970.
func stamp(ms, now int64) string {
	if ms == 0 {
		return "0"
	}
	return utc(ms) + " (" + relative(ms-now) + ")"
}

func utc(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// relative says how far ahead (d > 0) or behind a time is, in its largest
// whole unit.
func relative(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	abs := d.Abs()
	var s string
	switch {
	case abs < time.Second:
		s = fmt.Sprintf("%dms", abs.Milliseconds())
	case abs < time.Minute:
		s = fmt.Sprintf("%ds", int64(abs/time.Second))
	case abs < time.Hour:
		s = fmt.Sprintf("%dm", int64(abs/time.Minute))
	case abs < 48*time.Hour:
		s = fmt.Sprintf("%dh", int64(abs/time.Hour))
	default:
		s = fmt.Sprintf("%dd", int64(abs/(24*time.Hour)))
	}
	if d < 0 {
		return s + " ago"
	}
	if d == 0 {
		return "now"
	}
	return "in " + s
}
