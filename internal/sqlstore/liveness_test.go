package sqlstore

import (
	"errors"
	"testing"
	"time"
)

// TestLivenessPastDeadline: a session whose deadline has already passed
// when its Liveness is made (the process stalled since the confirmation
// was sent) is lost at once, and the timer that finds it so does not race
// the constructor (go test -race; a nil timer panicked or raced before).
func TestLivenessPastDeadline(t *testing.T) {
	late := errors.New("late")
	for range 200 {
		l := NewLiveness(time.Now().Add(-time.Hour), time.Second, func() error { return late })
		select {
		case <-l.lost:
		case <-time.After(10 * time.Second):
			t.Fatal("a Liveness past its deadline was not lost")
		}
	}
}
