package sqlstore

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
)

type loser struct{ why error }

func (l *loser) Lose(why error) { l.why = why }

// TestPassJudgment: a pass grants the head only; takes over a session
// ahead only once this store has seen it stand still for its T, never the
// waiter's own; finds the waiter's session lost when its ticket is gone;
// never grants a waiter queued before a seal; and waits no longer than
// the rules say.
func TestPassJudgment(t *testing.T) {
	ctx := context.Background()
	const self = 7
	var took []int64
	errAborted := errors.New("aborted")
	abort := false
	rules := PassRules{
		Takeover: func(_ context.Context, id, _ int64) error {
			if abort {
				return errAborted
			}
			took = append(took, id)
			return nil
		},
		IsAborted: func(err error) bool { return err == errAborted },
		Most:      time.Second, Margin: 10 * time.Millisecond, Aborted: 50 * time.Millisecond,
	}
	var o Observations
	se := &loser{}

	if fence, _, err := o.Pass(ctx, rules, se, self, "x", 3, []QueueEntry{{Ticket: 3, Fence: 1003, Session: self}}); fence != 1003 || err != nil {
		t.Fatalf("the head's pass: %v, %v; want granted with its row's fence 1003", fence, err)
	}
	// A session ahead with a T of 200ms, first seen now: not taken over,
	// the wait at most its T and the margin.
	q := []QueueEntry{{Ticket: 1, Session: 5, Count: 1, TimeoutMS: 200}, {Ticket: 2, Session: self, TimeoutMS: 0}, {Ticket: 3, Session: self}}
	fence, wait, err := o.Pass(ctx, rules, se, self, "x", 3, q)
	if fence != 0 || err != nil || len(took) != 0 || wait <= 0 || wait > 210*time.Millisecond {
		t.Fatalf("a pass behind a live session: %v, %v, %v, took over %v; want a wait of at most 210ms, no takeover", fence, wait, err, took)
	}
	// Its counter stood still for its T: taken over, and a new look at
	// once; the waiter's own session (T 0) never.
	time.Sleep(250 * time.Millisecond) // the time a counter must stand still, on the monotonic clock
	fence, wait, err = o.Pass(ctx, rules, se, self, "x", 3, q)
	if fence != 0 || err != nil || wait != 0 || len(took) != 1 || took[0] != 5 {
		t.Fatalf("a pass behind a session still for its T: %v, %v, %v, took over %v; want session 5 taken over and wait 0", fence, wait, err, took)
	}
	// A counter that moved starts the watch again.
	q[0].Count = 2
	if _, _, _ = o.Pass(ctx, rules, se, self, "x", 3, q); len(took) != 1 {
		t.Fatalf("a session whose counter moved was taken over: %v", took)
	}
	// A takeover the server aborted: the wait is bounded by Aborted.
	abort = true
	q[0].TimeoutMS, q[0].Count = 0, 3
	if _, wait, err = o.Pass(ctx, rules, se, self, "x", 3, q); err != nil || wait != 50*time.Millisecond {
		t.Fatalf("after an aborted takeover: wait %v, %v; want 50ms", wait, err)
	}
	// A TryLock's pass before it queues only takes over.
	abort = false
	if fence, _, err := o.Pass(ctx, rules, se, self, "x", math.MaxInt64, q[:1]); fence != 0 || err != nil || se.why != nil {
		t.Fatalf("a TryLock's pass: %v, %v, lost %v; want neither granted nor lost", fence, err, se.why)
	}
	// The ticket is gone: the session was taken over.
	if _, _, err := o.Pass(ctx, rules, se, self, "x", 4, q); !errors.Is(err, driver.ErrLeaseLost) || !errors.Is(se.why, driver.ErrLeaseLost) {
		t.Fatalf("a pass without its ticket: %v, session lost for %v; want ErrLeaseLost for both", err, se.why)
	}
	// Queued before a seal: never granted, even at the head.
	if fence, _, err := o.Pass(ctx, rules, &loser{}, self, "x", 3, []QueueEntry{{Ticket: 3, Session: self, Sealed: true}}); fence != 0 || !errors.Is(err, driver.ErrSealed) {
		t.Fatalf("the head's pass after a seal: %v, %v; want ErrSealed", fence, err)
	}
}
