package postgres

// Small helpers of this package's tests.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/poll"
)

// closed reports whether a Lost channel (or any) is closed, without waiting.
var closed = poll.Closed

// setHook calls f at the store's named points (and after each query of
// its pool has read its rows, with the statement as the point).
func setHook(s *driverStore, f func(point string)) { s.health.hook.Store(&f) }

// silentPair opens two stores with lockTimeout on a fresh schema of the
// shared server: a through the proxy p, which silenceAt freezes, and b
// directly.
func silentPair(t *testing.T, prefix string, lockTimeout time.Duration) (srv *pgtest.Server, schema string, p *pgtest.Proxy, a, b *driverStore) {
	t.Helper()
	opts := map[string]string{"lockTimeout": lockTimeout.String()}
	srv = pgtest.Shared(t)
	schema = freshSchema(prefix)
	p = pgtest.NewProxy(t, srv.Addr())
	a = openAt(t, pgtest.ConnStringAt(p.Addr()), schema, opts)
	b = openAt(t, srv.ConnString(), schema, opts)
	return srv, schema, p, a, b
}

// silenceAt runs call on a in a goroutine and returns once a reached the
// first point where at holds, and p froze there: a's network is silent
// from then on, until the test ends (the call's context is cancelled, p
// thawed, and the call waited for).
func silenceAt(t *testing.T, p *pgtest.Proxy, a *driverStore, at func(point string) bool, call func(ctx context.Context)) {
	frozen := make(chan struct{})
	var once sync.Once
	setHook(a, func(point string) {
		if at(point) {
			once.Do(func() { p.Freeze(); close(frozen) })
		}
	})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	t.Cleanup(p.Thaw)
	t.Cleanup(cancel)
	// A call that ends before the point (at load, on an error) would
	// leave the test waiting forever: CI saw a 7-minute hang here.
	ended := make(chan struct{})
	wg.Go(func() { defer close(ended); call(ctx) })
	select {
	case <-frozen:
	case <-ended:
		t.Fatal("the call ended before it reached the point to silence")
	}
}
