package etcd

import (
	"testing"
	"time"
)

// TestAttemptDeadline: the attempt deadline is attemptMin with no answers
// or fast ones, ignores a few slow answers among fast ones (a failover's),
// follows answers that are all slow (a slow disk), and stays within
// attemptMax.
func TestAttemptDeadline(t *testing.T) {
	var l latency
	if d := l.deadline(); d != attemptMin {
		t.Errorf("no answers: %v, want %v", d, attemptMin)
	}
	note := func(d time.Duration, n int) {
		for range n {
			l.observe(d)
		}
	}
	note(2*time.Millisecond, 40)
	if d := l.deadline(); d != attemptMin {
		t.Errorf("fast answers: %v, want %v", d, attemptMin)
	}
	note(1500*time.Millisecond, 6)
	note(2*time.Millisecond, 3) // 49 answers: recomputed with the slow ones in the window
	if d := l.deadline(); d != attemptMin {
		t.Errorf("a few slow answers among fast ones: %v, want %v", d, attemptMin)
	}
	note(80*time.Millisecond, 40)
	if d := l.deadline(); d != 800*time.Millisecond {
		t.Errorf("answers of 80ms: %v, want 800ms", d)
	}
	note(time.Second, 40)
	if d := l.deadline(); d != attemptMax {
		t.Errorf("answers of 1s: %v, want %v", d, attemptMax)
	}
}

// TestAttemptDeadlineAfterCuts: each cut doubles the next attempts'
// deadline (within attemptMax); slow answers keep it wide, fast ones
// bring it back to the median's in a few answers.
func TestAttemptDeadlineAfterCuts(t *testing.T) {
	var l latency
	for range 40 {
		l.observe(2 * time.Millisecond)
	}
	l.cut(time.Now(), l.deadline())
	if d := l.deadline(); d != 2*attemptMin {
		t.Fatalf("after a cut: %v, want %v", d, 2*attemptMin)
	}
	l.observe(100 * time.Millisecond) // the answer after the cut: 10x is 1s
	if d := l.deadline(); d != time.Second {
		t.Fatalf("after a cut and an answer of 100ms: %v, want 1s", d)
	}
	l.observe(2 * time.Millisecond)
	l.observe(2 * time.Millisecond)
	if d := l.deadline(); d != attemptMin {
		t.Fatalf("after fast answers: %v, want %v", d, attemptMin)
	}
	l.cut(time.Now(), l.deadline())
	l.cut(time.Now(), l.deadline())
	if d := l.deadline(); d != 4*attemptMin {
		t.Fatalf("after two cuts: %v, want %v", d, 4*attemptMin)
	}
	for range 10 {
		l.cut(time.Now(), l.deadline())
	}
	if d := l.deadline(); d != attemptMax {
		t.Fatalf("after many cuts: %v, want %v", d, attemptMax)
	}
	l.observe(150 * time.Millisecond) // slow: 10x is 1.5s
	if d := l.deadline(); d != 1500*time.Millisecond {
		t.Errorf("after a slow answer: %v, want 1.5s", d)
	}
	for range 3 {
		l.observe(2 * time.Millisecond)
	}
	if d := l.deadline(); d != attemptMin {
		t.Errorf("after fast answers: %v, want %v", d, attemptMin)
	}
}

// TestAttemptDeadlineCutAfterNarrowed: a cut of an attempt that started
// before answers narrowed the deadline (a frozen member's, among calls
// answered by the others) widens nothing; one that started after does.
func TestAttemptDeadlineCutAfterNarrowed(t *testing.T) {
	var l latency
	for range 40 {
		l.observe(2 * time.Millisecond)
	}
	before := time.Now()
	l.cut(before, l.deadline())
	if d := l.deadline(); d != 2*attemptMin {
		t.Fatalf("after a cut: %v, want %v", d, 2*attemptMin)
	}
	l.observe(2 * time.Millisecond) // a fast answer narrows it back
	if d := l.deadline(); d != attemptMin {
		t.Fatalf("after a fast answer: %v, want %v", d, attemptMin)
	}
	l.cut(before, 2*attemptMin) // started before that answer, with the widened deadline
	if d := l.deadline(); d != attemptMin {
		t.Errorf("after the cut of an attempt older than the answer: %v, want %v", d, attemptMin)
	}
	l.cut(time.Now().Add(time.Millisecond), attemptMin) // started after it
	if d := l.deadline(); d != 2*attemptMin {
		t.Errorf("after the cut of a later attempt: %v, want %v", d, 2*attemptMin)
	}
}

// TestAttemptDeadlineAfterLateRead: a read answered after its attempt
// deadline (reads are not cut) gives the next attempts twice its time,
// within attemptMax, as a cut at that time would have.
func TestAttemptDeadlineAfterLateRead(t *testing.T) {
	var l latency
	for range 40 {
		l.observe(2 * time.Millisecond)
	}
	l.late(400 * time.Millisecond)
	if d := l.deadline(); d != 800*time.Millisecond {
		t.Fatalf("after a read answered in 400ms: %v, want 800ms", d)
	}
	l.late(5 * time.Second)
	if d := l.deadline(); d != attemptMax {
		t.Fatalf("after a read answered in 5s: %v, want %v", d, attemptMax)
	}
}
