package main

import (
	"context"

	"github.com/cosid-go/store"
)

// lockReads is how many locks' waiters eachLock reads at once: a round
// trip each, so 10,000 lock names one after another took seconds on a
// server.
const lockReads = 16

// eachLock calls f with every lock name of st, in order, and the result of
// Waiters for it, reading up to lockReads of them at once ahead of f.
// It ends at f's first error, or the listing's, which it returns.
func eachLock(ctx context.Context, st *store.Store, f func(name string, ws []store.Waiter, err error) error) error {
	type read struct {
		name string
		ws   []store.Waiter
		err  error
		done chan struct{}
	}
	ctx, cancel := context.WithCancel(ctx)
	queue := make(chan *read, lockReads)
	var listErr error
	go func() {
		defer close(queue)
		for name, err := range st.Locks().All(ctx) {
			if err != nil {
				listErr = err // read after queue closes
				return
			}
			r := &read{name: name, done: make(chan struct{})}
			go func() {
				defer close(r.done)
				r.ws, r.err = st.Locks().Waiters(ctx, name)
			}()
			select {
			case queue <- r:
			case <-ctx.Done():
				<-r.done
				return
			}
		}
	}()
	var err error
	for r := range queue {
		<-r.done
		if err == nil {
			err = f(r.name, r.ws, r.err)
			if err != nil {
				cancel() // the reads in the queue end; they are waited for
			}
		}
	}
	cancel()
	if err != nil {
		return err
	}
	return listErr
}
