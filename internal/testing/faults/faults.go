// Package faults runs fault schedules for tests: faults done one at a
// time, each held a while and undone, until a duration has passed or the
// test failed, with a log of what was done. The faults themselves are the
// server helpers' (zktest, pgtest): this package only orders them.
//
// It is a test helper: import it from _test.go files and test helpers only.
package faults

import (
	"testing"
	"time"
)

// A Fault does one thing to the servers or the network, holds it, and
// undoes it before it returns. It returns what it did, for the log.
type Fault func() string

// Schedule is faults run one at a time.
type Schedule struct {
	Faults []Fault
	// Pick chooses the index of the fault of round (0, 1, ...); nil takes
	// the faults in turn.
	Pick func(round int) int
	// Before runs before each fault: traffic flows meanwhile.
	Before func()
	// After runs after each fault, before the next: a wait for the
	// servers to serve again, then traffic.
	After func()
	// More, if set, keeps the faults going past the duration while it
	// holds, up to four times the duration: until the work under faults
	// is enough to prove something, which a loaded machine slows down.
	More func() bool
}

// Run runs faults until d has passed (and More no longer holds) or t
// failed, and returns what it did.
func (s Schedule) Run(t testing.TB, d time.Duration) []string {
	var did []string
	start := time.Now()
	going := func() bool {
		if t.Failed() || t.Context().Err() != nil {
			return false
		}
		since := time.Since(start)
		return since < d || s.More != nil && s.More() && since < 4*d
	}
	for round := 0; going(); round++ {
		if s.Before != nil {
			s.Before()
		}
		i := round % len(s.Faults)
		if s.Pick != nil {
			i = s.Pick(round)
		}
		did = append(did, s.Faults[i]())
		if s.After != nil {
			s.After()
		}
	}
	return did
}

// Hold waits d, or until the test ends.
func Hold(t testing.TB, d time.Duration) {
	select {
	case <-time.After(d):
	case <-t.Context().Done():
	}
}
