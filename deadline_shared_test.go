package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cosid-go/store"
)

// TestSharedDeadlineIsolation: two calls on one shared deadline context;
// the first caller's cancel, with its cause, ends only the first call,
// and the second ends at its own deadline. A call after the timeout has
// passed idle gets a full fresh deadline, not a share of an old one.
func TestSharedDeadlineIsolation(t *testing.T) {
	const timeout = 640 * time.Millisecond
	type call struct {
		ctx context.Context
		dl  time.Time
		at  time.Time
	}
	calls := make(chan call, 2)
	st := openCtx(t, func(ctx context.Context) error {
		c := call{ctx: ctx, at: time.Now()}
		c.dl, _ = ctx.Deadline()
		calls <- c
		<-ctx.Done()
		return ctx.Err()
	}, store.WithTimeout(timeout))
	why := errors.New("first caller gave up")
	c1, cancel1 := context.WithCancelCause(context.Background())
	errs := make(chan error, 2)
	go func() { _, err := st.Ranges().Next(c1, "a", 1); errs <- err }()
	first := <-calls
	go func() { _, err := st.Ranges().Next(context.Background(), "b", 1); errs <- err }()
	second := <-calls
	if first.ctx.Done() == second.ctx.Done() {
		t.Log("calls share a Done channel")
	}
	cancel1(why)
	<-first.ctx.Done()
	// The second call may have reached its own deadline meanwhile on a
	// loaded machine; it must not have ended with the first one's cancel.
	if err := second.ctx.Err(); errors.Is(err, context.Canceled) || context.Cause(second.ctx) == why {
		t.Fatalf("the second call's context ended with the first caller's cancel: %v (cause %v)", err, context.Cause(second.ctx))
	}
	if got := context.Cause(first.ctx); got != why {
		t.Errorf("first call's cause %v, want %v", got, why)
	}
	<-second.ctx.Done()
	if err, cause := second.ctx.Err(), context.Cause(second.ctx); err != context.DeadlineExceeded || cause != context.DeadlineExceeded {
		t.Errorf("second call ended with %v, cause %v; want its deadline", err, cause)
	}
	<-errs
	<-errs
	// Idle past the timeout (the second call's deadline has passed): the
	// next call's deadline is the full timeout from its start (no shared
	// context ending within timeout/64 of it is left), and at most the
	// timeout from when the driver saw it.
	before := time.Now()
	go func() { _, err := st.Ranges().Next(context.Background(), "c", 1); errs <- err }()
	third := <-calls
	if third.dl.Before(before.Add(timeout)) || third.dl.After(third.at.Add(timeout)) {
		t.Errorf("after idle, a call got a deadline %v after its start, want the full %v (it was in the driver after %v)",
			third.dl.Sub(before), timeout, third.at.Sub(before))
	}
	<-errs
}
