package sqllocks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/netproxy"
)

type lockResult struct {
	l       driver.Lock
	err     error
	aLost   bool // whether the old holder's Lost was closed when this Lock returned
	granted time.Time
}

// lostBeforeTakeover proves the lock rule of docs/design.md (Locks on
// PostgreSQL, which the MySQL driver follows on InnoDB rows): when the
// holder's session fails (its network goes silent, an operator ends its
// server connection, the server is killed and restarted), another store
// gets the lock, and only after the holder's Lost has closed, with a
// higher fence.
func lostBeforeTakeover(t *testing.T, d Dialect) {
	const lockTimeout = 2 * time.Second
	opts := map[string]string{"lockTimeout": lockTimeout.String()}
	faults := []struct {
		name string
		// setup returns the holder's address and the fault.
		setup func(t *testing.T, srv Server, ns string, a func() Store) (string, func())
		// restart: the fault needs a server of its own, and ends every
		// session on it, the waiting store's too.
		restart bool
	}{
		{"silent network", func(t *testing.T, srv Server, _ string, _ func() Store) (string, func()) {
			p := netproxy.New(t, srv.Addr())
			return p.Addr(), p.Freeze
		}, false},
		{d.KillSessionName, func(t *testing.T, srv Server, ns string, a func() Store) (string, func()) {
			return srv.Addr(), func() { d.KillSession(t, srv, ns, a()) }
		}, false},
		{"server killed and restarted", func(t *testing.T, srv Server, _ string, _ func() Store) (string, func()) {
			return srv.Addr(), func() { srv.Kill(); srv.Restart(t) }
		}, true},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			var srv Server
			if f.restart {
				srv = d.Start(t)
			} else {
				t.Parallel()
				srv = d.Shared(t)
			}
			ns := d.Namespace(t, srv)
			var a Store
			addrA, fault := f.setup(t, srv, ns, func() Store { return a })
			a = d.Open(t, addrA, ns, opts)
			ctx := t.Context()
			la, err := a.Lock(ctx, "x", "a", true)
			if err != nil {
				t.Fatal(err)
			}
			b := d.Open(t, srv.Addr(), ns, opts)
			// b watches a's confirmations before the fault: a takeover
			// must still wait T from the last one.
			bctx, cancel := context.WithTimeout(ctx, lockTimeout/2)
			if _, err := b.Lock(bctx, "x", "b", true); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("b's Lock while a holds and confirms: %v, want a deadline", err)
			}
			cancel()
			if closed(la.Lost()) {
				t.Fatalf("a's hold was lost before the fault: %v", lostErr(la))
			}
			start := time.Now()
			fault()
			ch := make(chan lockResult, 1)
			go func() {
				for {
					l, err := b.Lock(ctx, "x", "b", true)
					// A restart ends b's session too: its waiting Lock
					// fails (it held nothing), and b, as a user would,
					// tries again on a new session. No other fault
					// touches b's session: there any failure counts.
					if f.restart && (errors.Is(err, driver.ErrLeaseLost) || errors.Is(err, driver.ErrUnavailable)) && ctx.Err() == nil {
						t.Logf("b's Lock failed: %v; trying again", err)
						time.Sleep(50 * time.Millisecond) // a user's pause before trying again
						continue
					}
					ch <- lockResult{l: l, err: err, aLost: closed(la.Lost()), granted: time.Now()}
					return
				}
			}()
			var r lockResult
			select {
			case r = <-ch:
			case <-time.After(d.TakeoverWithin):
				t.Fatalf("the other store was not granted the lock within %v of the fault", d.TakeoverWithin)
			}
			if r.err != nil {
				t.Fatalf("the other store's Lock: %v", r.err)
			}
			if !r.aLost {
				t.Fatalf("the other store was granted the lock %v after the fault while the holder's Lost was still open", r.granted.Sub(start))
			}
			if r.l.Fence() <= la.Fence() {
				t.Errorf("fence %d of the new holder is not above %d", r.l.Fence(), la.Fence())
			}
			if err := lostErr(la); !errors.Is(err, driver.ErrLeaseLost) {
				t.Errorf("the lost hold says %v, want ErrLeaseLost", err)
			}
			t.Logf("granted to the other store %v after the fault; the holder was told: %v", r.granted.Sub(start), lostErr(la))
			if err := la.Unlock(ctx); !errors.Is(err, driver.ErrLeaseLost) {
				t.Errorf("Unlock of the lost hold: %v, want ErrLeaseLost", err)
			}
			if err := r.l.Unlock(ctx); err != nil {
				t.Errorf("Unlock of the new hold: %v", err)
			}
		})
	}
}
