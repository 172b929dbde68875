package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store"
)

// ctxDriver is a range driver whose Next runs the test's f with the
// context the store gives it.
type ctxDriver struct {
	rangeOnly
	f func(ctx context.Context) error
}

func (d *ctxDriver) Next(ctx context.Context, key string, step int64) (int64, error) {
	return 0, d.f(ctx)
}

func openCtx(t *testing.T, f func(context.Context) error, opts ...store.Option) *store.Store {
	t.Helper()
	st, err := store.OpenDriver(&ctxDriver{f: f}, append(opts, store.WithCoalescing(false))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

type valueKey struct{}

// seen is what a driver saw of its context in one call.
type seen struct {
	entered  time.Time // when the driver was called
	deadline time.Time
	value    any
	err      error // ctx.Err() once Done
	cause    error
	childErr error // a context the driver derived
}

// blockUntilDone is a driver call that waits for its context to end.
func blockUntilDone(got *seen) func(context.Context) error {
	return func(ctx context.Context) error {
		got.entered = time.Now()
		got.deadline, _ = ctx.Deadline()
		got.value = ctx.Value(valueKey{})
		child, cancel := context.WithCancel(ctx)
		defer cancel()
		<-ctx.Done()
		<-child.Done()
		got.err, got.cause, got.childErr = ctx.Err(), context.Cause(ctx), child.Err()
		return errors.New("gave up")
	}
}

// TestTimeoutOnEveryPath: an operation that runs past the store timeout
// ends with DeadlineExceeded, at its deadline and not before, the
// deadline at most the timeout from its start and at least 63/64 of it,
// whether the caller's context can end or not (the two paths of the
// shared deadlines, deadline.go), and for a second call that shares the
// first one's deadline context. The driver sees the caller's values and
// what context.WithTimeout would give: the error, the cause, a derived
// context's error.
func TestTimeoutOnEveryPath(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for name, ctx := range map[string]context.Context{
		"background":  context.WithValue(context.Background(), valueKey{}, "v"),
		"cancellable": context.WithValue(t.Context(), valueKey{}, "v"),
	} {
		t.Run(name, func(t *testing.T) {
			var got [2]seen
			entered := make(chan int)
			st := openCtx(t, func(ctx context.Context) error {
				i := <-entered
				return blockUntilDone(&got[i])(ctx)
			}, store.WithTimeout(timeout))
			var wg sync.WaitGroup
			var starts, ends [2]time.Time
			var errs [2]error
			for i := range 2 {
				starts[i] = time.Now()
				wg.Go(func() {
					_, errs[i] = st.Ranges().Next(ctx, "k", 1)
					ends[i] = time.Now()
				})
				entered <- i // the first call is in the driver before the second starts
			}
			wg.Wait()
			for i, g := range got {
				if !errors.Is(errs[i], context.DeadlineExceeded) {
					t.Errorf("call %d: %v, want DeadlineExceeded", i, errs[i])
				}
				if g.deadline.After(g.entered.Add(timeout)) || g.deadline.Before(starts[i].Add(timeout-timeout/64)) {
					t.Errorf("call %d: deadline %v after its start, want within [%v, %v] (it was in the driver after %v)",
						i, g.deadline.Sub(starts[i]), timeout-timeout/64, timeout, g.entered.Sub(starts[i]))
				}
				if ends[i].Before(g.deadline) {
					t.Errorf("call %d ended %v before its deadline", i, g.deadline.Sub(ends[i]))
				}
				if g.value != "v" || g.err != context.DeadlineExceeded || g.cause != context.DeadlineExceeded ||
					g.childErr != context.DeadlineExceeded {
					t.Errorf("call %d: the driver saw value %v, Err %v, Cause %v, a child's Err %v; want v and DeadlineExceeded",
						i, g.value, g.err, g.cause, g.childErr)
				}
			}
		})
	}
}

// TestCallerEndsTheCall: a caller's context that ends first ends the
// call with its own error and cause, not the store timeout's; one ended
// already never runs the driver with a live context; a caller's deadline
// sooner than the store timeout is the one the driver sees.
func TestCallerEndsTheCall(t *testing.T) {
	var got seen
	entered := make(chan struct{}, 1)
	block := blockUntilDone(&got)
	st := openCtx(t, func(ctx context.Context) error {
		entered <- struct{}{}
		return block(ctx)
	}, store.WithTimeout(time.Minute))

	why := errors.New("the caller gave up")
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan error)
	go func() {
		_, err := st.Ranges().Next(ctx, "k", 1)
		done <- err
	}()
	<-entered
	cancel(why)
	if err := <-done; !errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Next = %v, want Canceled", err)
	}
	if got.err != context.Canceled || got.cause != why || got.childErr != context.Canceled {
		t.Errorf("the driver saw Err %v, Cause %v, a child's Err %v; want Canceled, %v, Canceled", got.err, got.cause, got.childErr, why)
	}

	var live bool
	st = openCtx(t, func(ctx context.Context) error {
		live = ctx.Err() == nil
		return ctx.Err()
	}, store.WithTimeout(time.Minute))
	if _, err := st.Ranges().Next(ctx, "k", 1); !errors.Is(err, context.Canceled) || live {
		t.Errorf("Next with an ended context = %v, the driver's context live: %v; want Canceled, not live", err, live)
	}

	var deadline time.Time
	st = openCtx(t, func(ctx context.Context) error {
		deadline, _ = ctx.Deadline()
		return nil
	}, store.WithTimeout(time.Minute))
	sooner, cancelSooner := context.WithTimeout(t.Context(), time.Second)
	defer cancelSooner()
	want, _ := sooner.Deadline()
	if _, err := st.Ranges().Next(sooner, "k", 1); err != nil || !deadline.Equal(want) {
		t.Errorf("Next = %v with deadline %v, want the caller's %v", err, deadline, want)
	}
}

// TestCallsShareTimers: calls in a row share deadline contexts: one per
// 1/64 of the timeout at most, not one per call.
func TestCallsShareTimers(t *testing.T) {
	const timeout = time.Minute
	dones := map[<-chan struct{}]bool{}
	st := openCtx(t, func(ctx context.Context) error {
		dones[ctx.Done()] = true
		return nil
	}, store.WithTimeout(timeout))
	start := time.Now()
	const calls = 200
	for range calls {
		if _, err := st.Ranges().Next(context.Background(), "k", 1); err != nil {
			t.Fatal(err)
		}
	}
	if most := 1 + int(time.Since(start)/(timeout/64)); len(dones) > most {
		t.Errorf("%d calls in %v had %d deadline contexts, want at most %d", calls, time.Since(start), len(dones), most)
	}
}
