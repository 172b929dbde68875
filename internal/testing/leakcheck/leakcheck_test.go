package leakcheck

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestWaitsForAGoroutineEnding: a goroutine that ends a second after the
// check begins (longer than goleak's own retries) is not a leak.
func TestWaitsForAGoroutineEnding(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	done := make(chan struct{})
	go func() {
		<-done
	}()
	// Timed from before the timer is set: the goroutine ends a second
	// after this at the earliest (at load 19 a start read after it was
	// 2 ms late, and the check's 998 ms looked too short).
	start := time.Now()
	time.AfterFunc(time.Second, func() { close(done) })
	if err := find(Wait, []goleak.Option{ignore}); err != nil {
		t.Fatalf("a goroutine ending after 1s reported: %v", err)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("the check returned after %v, before the goroutine could end", took)
	}
}

// TestReportsALeak: a goroutine that never ends is reported, naming its
// function.
func TestReportsALeak(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	stop := make(chan struct{})
	defer close(stop)
	go leaked(stop)
	var rec recorder
	start := time.Now()
	const wait = 2 * time.Second
	verifyNone(&rec, wait, []goleak.Option{ignore})
	if !strings.Contains(rec.msg, "leakcheck.leaked") {
		t.Errorf("VerifyNone with a leaked goroutine said %q, want it named", rec.msg)
	}
	if took := time.Since(start); took < wait {
		t.Errorf("VerifyNone gave up after %v, before %v", took, wait)
	}
}

func leaked(stop <-chan struct{}) { <-stop }

// recorder is a testing.TB that keeps the failure message.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
}
