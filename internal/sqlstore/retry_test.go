package sqlstore

import (
	"context"
	"errors"
	"testing"
)

// TestRetryAborted: an aborted transaction is run again until it does
// not abort; once the context ends, the error is the context's and the
// last abort's; another error is returned at once.
func TestRetryAborted(t *testing.T) {
	errAborted, errOther := errors.New("aborted"), errors.New("other")
	isAborted := func(err error) bool { return err == errAborted }
	runs := 0
	err := RetryAborted(t.Context(), isAborted, func() error {
		if runs++; runs < 3 {
			return errAborted
		}
		return nil
	})
	if err != nil || runs != 3 {
		t.Fatalf("after two aborts: %v in %d runs; want nil in 3", err, runs)
	}
	runs = 0
	if err := RetryAborted(t.Context(), isAborted, func() error { runs++; return errOther }); err != errOther || runs != 1 {
		t.Fatalf("another error: %v in %d runs; want it at once", err, runs)
	}
	ctx, cancel := context.WithCancel(t.Context())
	err = RetryAborted(ctx, isAborted, func() error { cancel(); return errAborted })
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errAborted) {
		t.Fatalf("aborted after the context ended: %v; want the context's error and the abort", err)
	}
}
