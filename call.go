package store

import (
	"context"
	"errors"
	"time"

	"github.com/cosid-go/store/driver"
)

// op is one call of the portable API: its name and subject for the error,
// and the outcome of checking its arguments.
type op struct {
	name  string // "Next", "Acquire", ...
	key   string // the key, namespace, slot or lock it applies to
	check error  // the first invalid argument, or nil
	wait  bool   // bounded by the caller's ctx only, not the store timeout (Lock)
	lease bool   // Renew or Release: ErrLeaseLost is reported as LeaseLost
	fence int64  // the lease's fence, for that report
}

// call runs an operation the way every method of the portable API does:
// refuse bad arguments, refuse a closed store, find the driver's capability
// D, bound ctx with the store timeout, call f, and wrap its error once. f's
// result is returned even with an error (Purge reports what it deleted).
// Observers see every call, whatever its driver.
func call[D, T any](ctx context.Context, s *Store, o op, f func(context.Context, D) (T, error)) (T, error) {
	if len(s.onEnd) == 0 && len(s.onStart) == 0 {
		v, err := run(ctx, s, o, f)
		if err != nil {
			s.failed(o, err)
		}
		return v, err
	}
	start := time.Now()
	ctx = s.opStart(ctx, o)
	counted := driver.CountRetries(ctx) // ctx, counting the driver's retries
	v, err := run(counted, s, o, f)
	s.opDone(ctx, o, time.Since(start), counted.N(), err)
	if err != nil {
		s.failed(o, err)
	}
	return v, err
}

// failed reports a lease found lost by Renew or Release.
func (s *Store) failed(o op, err error) {
	if s.observed() && o.lease && errors.Is(err, ErrLeaseLost) {
		s.Report(Event{Kind: LeaseLost, Key: o.key, Fence: o.fence, Err: err})
	}
}

// run is call without the observers.
func run[D, T any](ctx context.Context, s *Store, o op, f func(context.Context, D) (T, error)) (T, error) {
	var zero T
	if o.check != nil {
		return zero, &Error{Op: o.name, Key: o.key, Err: o.check}
	}
	if s.isClosed() {
		return zero, &Error{Op: o.name, Key: o.key, Err: ErrClosed}
	}
	d, ok := s.drv.(D)
	if !ok {
		return zero, &Error{Op: o.name, Key: o.key, Err: ErrUnsupported}
	}
	if !o.wait {
		var cancel context.CancelFunc
		ctx, cancel = s.bound(ctx)
		defer cancel()
	}
	v, err := f(ctx, d)
	if err != nil {
		return v, wrap(ctx, o.name, o.key, s.closedErr(err))
	}
	return v, nil
}

// callErr is call for operations that return only an error.
func callErr[D any](ctx context.Context, s *Store, o op, f func(context.Context, D) error) error {
	_, err := call(ctx, s, o, func(ctx context.Context, d D) (struct{}, error) {
		return struct{}{}, f(ctx, d)
	})
	return err
}

// firstErr returns the first non-nil error: the checks of an operation's
// arguments, in the order of its parameters.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
