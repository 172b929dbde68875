// Package poll waits in tests for a state no event announces, with a
// bound: never a bare sleep standing in for synchronisation.
//
// It is a test helper: import it from _test.go files only.
package poll

import (
	"errors"
	"testing"
	"time"
)

// Until polls cond every 5ms until it holds. It fails t, naming what, when
// cond does not hold within d or the test ends first.
func Until(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	loop(t, d, what, 5*time.Millisecond, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

// Succeeds calls f every 100ms until it returns nil: a call that fails for
// a while, as a client's around a server's restart. It fails t with f's
// last error when f does not succeed within d or the test ends first.
func Succeeds(t testing.TB, d time.Duration, what string, f func() error) {
	t.Helper()
	loop(t, d, what, 100*time.Millisecond, f)
}

var errNotYet = errors.New("not yet")

func loop(t testing.TB, d time.Duration, what string, every time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			if err == errNotYet {
				t.Fatalf("%s: not within %v", what, d)
			}
			t.Fatalf("%s: still failing after %v: %v", what, d, err)
		}
		select {
		case <-time.After(every):
		case <-t.Context().Done():
			t.Fatalf("%s: the test ended first", what)
		}
	}
}

// Closed reports whether ch is closed, without waiting.
func Closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
