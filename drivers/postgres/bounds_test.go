package postgres

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/pgtest"
)

// setHook calls f at the store's named points (and after each query of
// its pool has read its rows, with the statement as the point).
func setHook(s *driverStore, f func(point string)) { s.health.hook.Store(&f) }

// TestSilentClientInEnqueue: store a's network goes silent between its
// lock enqueue's INSERT and COMMIT, and stays silent past a's lock
// timeout. Another store's Lock of an unrelated name, then of the same
// name, each succeed within the server-side bounds: the server ends a's
// idle transaction, and nobody waits on a's rows meanwhile.
func TestSilentClientInEnqueue(t *testing.T) {
	t.Parallel()
	const lockTimeout = 2 * time.Second
	opts := map[string]string{"lockTimeout": lockTimeout.String()}
	srv := pgtest.Shared(t)
	schema := freshSchema("silentlock")
	p := pgtest.NewProxy(t, srv.Addr())
	a := openAt(t, pgtest.ConnStringAt(p.Addr()), schema, opts)
	b := openAt(t, srv.ConnString(), schema, opts)
	su := superuser(t, srv)
	ctx := t.Context()
	if _, err := b.Lock(ctx, "warm", "b", true); err != nil { // b's session started before
		t.Fatal(err)
	}
	frozen := make(chan struct{})
	var once sync.Once
	setHook(a, func(point string) {
		if point == "enqueue" {
			once.Do(func() { p.Freeze(); close(frozen) })
		}
	})
	actx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer p.Thaw()
	defer cancel()
	wg.Go(func() { _, _ = a.Lock(actx, "x", "a", true) })
	<-frozen
	// Past a's lock timeout by the database's clock: the old rule would
	// have every pass delete a's session, waiting on its open transaction.
	deadline := time.Now().Add(10 * lockTimeout)
	for {
		var expired bool
		err := su.QueryRow(ctx, `SELECT bool_and(confirmed_at + timeout_ms < (extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM `+
			pgx.Identifier{schema}.Sanitize()+`.cosid_lock_session WHERE id = $1`, a.locks.cur.id).Scan(&expired)
		if err != nil {
			t.Fatal(err)
		}
		if expired {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a's session never looked expired")
		}
		time.Sleep(50 * time.Millisecond) // waiting for the database's clock
	}
	bound := boundsOf(lockTimeout).lock + 2*time.Second // slack for a loaded machine
	for _, name := range []string{"unrelated", "x"} {
		start := time.Now()
		bctx, cancel := context.WithTimeout(ctx, bound)
		l, err := b.Lock(bctx, name, "b", true)
		cancel()
		if err != nil {
			t.Fatalf("b's Lock of %q with a silent client in its enqueue: %v after %v (bound %v)", name, err, time.Since(start), bound)
		}
		t.Logf("b locked %q %v after", name, time.Since(start))
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSilentAcquirer: an Acquire whose network goes silent right after it
// locked a live slot (its preferred) FOR UPDATE does not stop the slot's
// holder from renewing within the server-side bounds.
func TestSilentAcquirer(t *testing.T) {
	t.Parallel()
	const lockTimeout = 2 * time.Second
	opts := map[string]string{"lockTimeout": lockTimeout.String()}
	srv := pgtest.Shared(t)
	schema := freshSchema("silentslot")
	p := pgtest.NewProxy(t, srv.Addr())
	a := openAt(t, pgtest.ConnStringAt(p.Addr()), schema, opts)
	h := openAt(t, srv.ConnString(), schema, opts)
	ctx := t.Context()
	ns := driver.Namespace{Name: "w", Limit: 4, Tolerance: 100 * time.Millisecond}
	l, err := h.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "h", Incarnation: "1", TTL: time.Minute, Preferred: 2})
	if err != nil {
		t.Fatal(err)
	}
	frozen := make(chan struct{})
	var once sync.Once
	setHook(a, func(point string) {
		if strings.Contains(point, "slot IN (") && strings.HasSuffix(point, "FOR UPDATE") {
			once.Do(func() { p.Freeze(); close(frozen) })
		}
	})
	actx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer p.Thaw()
	defer cancel()
	wg.Go(func() {
		_, _ = a.Acquire(actx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "1", TTL: time.Minute, Preferred: l.Slot})
	})
	<-frozen
	bound := boundsOf(lockTimeout).lock + 2*time.Second
	for i := range 3 {
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, bound)
		l2, err := h.Renew(rctx, l)
		cancel()
		if err != nil {
			t.Fatalf("renew %d with a silent acquirer holding the slot's row: %v after %v (bound %v)", i, err, time.Since(start), bound)
		}
		t.Logf("renew %d took %v", i, time.Since(start))
		l = l2
	}
}
