package sqlstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// RetryAborted runs fn, a whole transaction, again after a short random
// pause (about 10ms, doubling up to 200ms) while it fails with an error
// aborted reports (the server rolled the transaction back: a deadlock, a
// lock wait past its bound) and ctx lasts. Both SQL drivers retry so.
func RetryAborted(ctx context.Context, aborted func(error) bool, fn func() error) error {
	pause := 10 * time.Millisecond
	for {
		err := fn()
		if !aborted(err) {
			return err
		}
		t := time.NewTimer(pause/2 + rand.N(pause))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (after: %w)", ctx.Err(), err)
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}
