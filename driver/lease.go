package driver

import "math"

// The lease arithmetic of docs/design.md (Slot leases), shared by every driver so that each
// computes the same times from the same stored fields. All values are
// milliseconds; sums saturate at math.MaxInt64, because a stored value may
// be huge (a hand-written node) and a wrapped sum would end a term before it
// began.

// TermExpiresAt is a term's expiry: the time of its last write plus its
// ttl, never below the lower bound a renewal recorded.
func TermExpiresAt(expiresMin, written, ttl int64) int64 {
	return max(expiresMin, addSat(written, ttl))
}

// TermCeiling is the bound of a term's timestamps: its expiry plus the
// namespace's clock tolerance, never below the recorded lower bound.
func TermCeiling(ceilingMin, expiresAt, tolerance int64) int64 {
	return max(ceilingMin, addSat(expiresAt, tolerance))
}

// ReleasedFloor is the floor of the term after one released with used, the
// highest timestamp it issued (negative when unknown): right above used,
// kept within [floor, ceiling], or the ceiling when used is unknown.
func ReleasedFloor(used, floor, ceiling int64) int64 {
	if used < 0 {
		return ceiling
	}
	return min(max(addSat(used, 1), floor), ceiling)
}

func addSat(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
