package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/driver"
)

// TestSilentClientInEnqueue: store a's network goes silent between its
// lock enqueue's INSERT and COMMIT, and stays silent past a's lock
// timeout. Another store's Lock of an unrelated name, then of the same
// name, each succeed within the server-side bounds: the server ends a's
// idle transaction, and nobody waits on a's rows meanwhile.
func TestSilentClientInEnqueue(t *testing.T) {
	t.Parallel()
	const lockTimeout = 2 * time.Second
	srv, schema, p, a, b := silentPair(t, "silentlock", lockTimeout)
	su := superuser(t, srv)
	ctx := t.Context()
	if _, err := b.Lock(ctx, "warm", "b", true); err != nil { // b's session started before
		t.Fatal(err)
	}
	silenceAt(t, p, a, func(point string) bool { return point == "enqueue" },
		func(ctx context.Context) { _, _ = a.Lock(ctx, "x", "a", true) })
	// Past a's lock timeout by the database's clock: the old rule would
	// have every pass delete a's session, waiting on its open transaction.
	deadline := time.Now().Add(10 * lockTimeout)
	for {
		var expired bool
		err := su.QueryRow(ctx, `SELECT bool_and(confirmed_at + timeout_ms < (extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM `+
			pgx.Identifier{schema}.Sanitize()+`.cosid_lock_session WHERE id = $1`, a.locks.Current().id).Scan(&expired)
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
	_, _, p, a, h := silentPair(t, "silentslot", lockTimeout)
	ctx := t.Context()
	ns := driver.Namespace{Name: "w", Limit: 4, Tolerance: 100 * time.Millisecond}
	l, err := h.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "h", Incarnation: "1", TTL: time.Minute, Preferred: 2})
	if err != nil {
		t.Fatal(err)
	}
	silenceAt(t, p, a, func(point string) bool {
		// The acquirer goes silent, its transaction open, at its read of
		// the preferred slot: a busy slot is read without a row lock
		// (what it holds by then, the namespace's, must not stall Renew).
		return strings.Contains(point, "slot IN (")
	}, func(ctx context.Context) {
		_, _ = a.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "1", TTL: time.Minute, Preferred: l.Slot})
	})
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
