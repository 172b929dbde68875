package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/etcdtest"
	"github.com/cosid-go/store/internal/testing/eventrec"
	"github.com/cosid-go/store/internal/testing/leakcheck"
)

// awaitOrder polls, up to within, until the recorded kinds hold want in
// order (others and repeats allowed).
func awaitOrder(t *testing.T, ev *eventrec.Recorder, within time.Duration, want ...store.EventKind) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !eventrec.InOrder(ev.Kinds(), want...) {
		if time.Now().After(deadline) {
			t.Fatalf("events %v: no %v in this order within %v", ev.Kinds(), want, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConnectionEvents: what an operator sees when the only member goes
// away and comes back, as with ZooKeeper and PostgreSQL. Killed: the store
// reports Disconnected with no call in flight, naming the failure, and
// Connected once the restarted member accepts its connection again, still
// with no call. Paused: the connection looks fine to gRPC (no stream is
// open, so no keepalive pings), but a call finds no member answering
// (ErrUnavailable) and the store reports Disconnected; resumed, Connected
// with the first answer. Paused with a lock held and no call: gRPC's
// keepalive finds it, Disconnected; resumed, Connected. All logged, and
// Close leaves no goroutine.
func TestConnectionEvents(t *testing.T) {
	c := etcdtest.Start(t, 1)
	m := c.Members[0]
	defer leakcheck.VerifyNone(t, goleak.IgnoreCurrent(),
		// The restarted member's process waiter, the cluster's.
		goleak.IgnoreAnyFunction("os/exec.(*Cmd).Wait"))
	ev := eventrec.New()
	st, err := store.Open("etcd", map[string]string{"endpoints": c.Endpoints()[0], "prefix": freshPrefix("events")},
		ev.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	if _, err := st.Ranges().Next(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	if got := ev.Of(store.Connected); len(got) != 1 || got[0].Server != c.Endpoints()[0] {
		t.Fatalf("connected events at open: %+v, want one naming %s", got, c.Endpoints()[0])
	}

	m.Stop()
	d := ev.Await(t, store.Disconnected, 30*time.Second)
	if d.Err == nil || !strings.Contains(d.Err.Error(), strings.TrimPrefix(c.Endpoints()[0], "http://")) {
		t.Errorf("disconnected event %+v: want the failure, naming the member", d)
	}
	t.Logf("killed: %v", d.Err)
	c.Restart(t, m)
	// gRPC dials again on its own, after a backoff that grows (1s, 1.6s, ...).
	awaitOrder(t, ev, 60*time.Second, store.Connected, store.Disconnected, store.Connected)
	if _, err := st.Ranges().Next(ctx, "k", 1); err != nil {
		t.Fatalf("Next after the restart: %v", err)
	}

	m.Pause()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	err = st.Ping(pctx)
	cancel()
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Ping with the member paused: %v, want ErrUnavailable", err)
	}
	awaitOrder(t, ev, 30*time.Second, store.Connected, store.Disconnected, store.Connected, store.Disconnected)
	m.Resume()
	deadline := time.Now().Add(30 * time.Second)
	for st.Ping(ctx) != nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	awaitOrder(t, ev, 30*time.Second, store.Connected, store.Disconnected, store.Connected, store.Disconnected, store.Connected)

	// Paused again with a lock held, and no call: the hold's watch keeps
	// a stream open, so gRPC's keepalive (10s, then 5s for the answer)
	// finds the member hung. (The default 60s session outlives the pause:
	// a lost hold ends its watch, and then nothing would ping.)
	if _, err := st.Locks().Lock(ctx, "held"); err != nil {
		t.Fatal(err)
	}
	m.Pause()
	start := time.Now()
	awaitOrder(t, ev, 60*time.Second, store.Connected, store.Disconnected, store.Connected, store.Disconnected, store.Connected,
		store.Disconnected)
	t.Logf("hung member reported after %v", time.Since(start))
	m.Resume()
	awaitOrder(t, ev, 60*time.Second, store.Connected, store.Disconnected, store.Connected, store.Disconnected, store.Connected,
		store.Disconnected, store.Connected)

	out := ev.Log()
	for _, want := range []string{"store: connected", "store: disconnected"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log has no %q:\n%s", want, out)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSessionExpiredEvent: an operator revokes the lease of a store's
// idle lock session: the next keep-alive finds it gone, and the store
// reports Expired, with the lease, and logs it.
func TestSessionExpiredEvent(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("expired")
	ev := eventrec.New()
	st, err := store.Open("etcd", map[string]string{"endpoints": sharedServer(t).Endpoints()[0], "prefix": prefix, "sessionTTL": "3s"},
		ev.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := st.Locks().Lock(ctx, "l")
	if err != nil {
		t.Fatal(err)
	}
	cli := rawClient(t)
	resp, err := cli.Get(ctx, prefix+"/lock/l/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease == 0 {
		t.Fatalf("the lock key: %v, %v", resp, err)
	}
	lease := clientv3.LeaseID(resp.Kvs[0].Lease)
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if len(ev.Of(store.Expired)) != 0 {
		t.Fatalf("expired before the revoke: %v", ev.Kinds())
	}
	if _, err := cli.Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	e := ev.Await(t, store.Expired, 30*time.Second) // a keep-alive every second
	if e.Err == nil || !strings.Contains(e.Err.Error(), fmt.Sprintf("%x", int64(lease))) {
		t.Errorf("expired event %+v: want the lease %x named", e, int64(lease))
	}
	if !strings.Contains(ev.Log(), "store: session expired") {
		t.Errorf("the log has no expired session:\n%s", ev.Log())
	}
	// The next Lock runs on a new session.
	if l, err := st.Locks().Lock(ctx, "l"); err != nil {
		t.Errorf("Lock after the expiry: %v", err)
	} else {
		l.Unlock(ctx)
	}
}
