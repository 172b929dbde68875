package driver

import "fmt"

// ForbiddenInName reports the characters no key, namespace, owner key or
// lock name may contain, whatever the driver: NUL and the characters
// ZooKeeper refuses in a path. ZooKeeper checks paths as UTF-16, where a
// character above U+FFFF is a surrogate pair, and refuses surrogates, so
// those are refused too. Package store checks every name with it before a
// driver sees it; a driver that builds paths from names may check again.
func ForbiddenInName(r rune) bool {
	return r <= 0x1F || r > 0xFFFF ||
		(r >= 0x7F && r <= 0x9F) ||
		(r >= 0xD800 && r <= 0xF8FF) ||
		(r >= 0xFFF0 && r <= 0xFFFF)
}

// CheckStep refuses a step below 1 with ErrInvalidArgument, for a driver's
// Next: a negative step would move a key back, and every value above the
// new next would be handed out twice.
func CheckStep(step int64) error {
	if step < 1 {
		return fmt.Errorf("step %d is less than 1: %w", step, ErrInvalidArgument)
	}
	return nil
}
