package store

import (
	"strings"
	"time"
	"unicode/utf8"
)

// Limits shared by every driver.
const (
	MaxKeyLen      = 1024    // bytes in a range key, lock or namespace name, or owner key
	MaxSlots       = 1 << 20 // the largest namespace limit
	MaxTTL         = 24 * time.Hour
	MaxTolerance   = time.Hour
	MaxIncarnation = 128 // bytes
)

// checkKey validates a range key: one or more '/'-separated segments.
func checkKey(what, key string) error {
	if key == "" {
		return invalid("%s is empty", what)
	}
	if len(key) > MaxKeyLen {
		return invalid("%s is %d bytes, more than %d", what, len(key), MaxKeyLen)
	}
	for _, seg := range strings.Split(key, "/") {
		if err := checkSegment(what, key, seg); err != nil {
			return err
		}
	}
	return nil
}

// checkName validates a single segment: a namespace, owner key or lock name.
func checkName(what, name string) error {
	if name == "" {
		return invalid("%s is empty", what)
	}
	if len(name) > MaxKeyLen {
		return invalid("%s is %d bytes, more than %d", what, len(name), MaxKeyLen)
	}
	if strings.Contains(name, "/") {
		return invalid("%s %q contains '/'", what, name)
	}
	return checkSegment(what, name, name)
}

func checkSegment(what, whole, seg string) error {
	switch seg {
	case "":
		return invalid("%s %q has an empty segment", what, whole)
	case ".", "..":
		return invalid("%s %q has a %q segment", what, whole, seg)
	}
	if !utf8.ValidString(seg) {
		return invalid("%s %q is not valid UTF-8", what, whole)
	}
	for _, r := range seg {
		if forbidden(r) {
			return invalid("%s %q contains the forbidden character %U", what, whole, r)
		}
	}
	return nil
}

// forbidden reports the characters ZooKeeper refuses in a path, and NUL.
// ZooKeeper checks paths as UTF-16, so a character above U+FFFF, written as
// a surrogate pair, is refused too.
func forbidden(r rune) bool {
	return r == 0 || r > 0xFFFF ||
		(r >= 0x01 && r <= 0x1F) ||
		(r >= 0x7F && r <= 0x9F) ||
		(r >= 0xD800 && r <= 0xF8FF) ||
		(r >= 0xFFF0 && r <= 0xFFFF)
}

func checkStep(step int64) error {
	if step < 1 {
		return invalid("step %d is less than 1", step)
	}
	return nil
}

func checkNext(next int64) error {
	if next < 0 {
		return invalid("next value %d is negative", next)
	}
	return nil
}

func checkSlot(what string, slot, limit int) error {
	if slot < 0 || slot >= limit {
		return invalid("%s %d is outside [0, %d)", what, slot, limit)
	}
	return nil
}

func checkMillis(what string, d, min, max time.Duration) error {
	if d < min || d > max {
		return invalid("%s %v is outside [%v, %v]", what, d, min, max)
	}
	if d%time.Millisecond != 0 {
		return invalid("%s %v is not a whole number of milliseconds", what, d)
	}
	return nil
}

func checkNamespace(ns Namespace) error {
	if err := checkName("namespace", ns.Name); err != nil {
		return err
	}
	if ns.Limit < 1 || ns.Limit > MaxSlots {
		return invalid("namespace %q: limit %d is outside [1, %d]", ns.Name, ns.Limit, MaxSlots)
	}
	return checkMillis("tolerance", ns.Tolerance, 0, MaxTolerance)
}

func checkIncarnation(inc string) error {
	if inc == "" || len(inc) > MaxIncarnation {
		return invalid("incarnation %q must be 1 to %d bytes", inc, MaxIncarnation)
	}
	for _, r := range inc {
		// It is stored in name=value lines: no line breaks or other controls.
		if r < 0x20 || r == 0x7F || forbidden(r) || !utf8.ValidRune(r) {
			return invalid("incarnation %q contains the character %U", inc, r)
		}
	}
	return nil
}
