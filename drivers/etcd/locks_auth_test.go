package etcd

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/etcdtest"
)

// TestLockAuthOncePerSession: with authentication on, a store holding a
// lock and waiting for it again (its session's keep-alives, its watch and
// the waiter's wait for its predecessor) authenticates no more while all
// goes well: over three session TTLs, every stream stays open. Each
// authentication is a bcrypt check and a raft write on the members.
func TestLockAuthOncePerSession(t *testing.T) {
	ctx := t.Context()
	c := etcdtest.Start(t, 1)
	password := "pw-" + freshPrefix("lockauth")[len("/test/"):]
	c.EnableAuth(t, "store", password)
	var auths atomic.Int64
	cfg, err := parseOptions(map[string]string{"endpoints": c.Endpoints()[0], "prefix": freshPrefix("lockauth"),
		"username": "store", "password": password, "sessionTTL": "2s"})
	if err != nil {
		t.Fatal(err)
	}
	d := newStore(cfg, nil)
	d.dialOpt = []grpc.DialOption{grpc.WithChainUnaryInterceptor(func(ictx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if strings.HasSuffix(method, "/Authenticate") {
			auths.Add(1)
		}
		return invoker(ictx, method, req, reply, cc, opts...)
	})}
	if err := d.Connect(ctx); err != nil {
		d.Close()
		t.Fatal(err)
	}
	st, err := store.OpenDriver(d)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	held, err := st.Locks().Lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := st.Locks().Lock(ctx, "a")
		if err == nil {
			err = l.Unlock(ctx)
		}
		got <- err
	}()
	waitQueued(t, st, "a", 2)
	// The spans measured: one TTL for the session's streams to open (the
	// first keep-alive goes a third of the TTL after the grant), then
	// three TTLs in which a keep-alive stream per keep-alive and a watch
	// per wait would authenticate 15 times or more.
	var before int64
	for i, span := range []time.Duration{2 * time.Second, 6 * time.Second} {
		select {
		case err := <-got:
			t.Fatalf("the second Lock ended while the lock was held: %v", err)
		case <-time.After(span):
		}
		if i == 0 {
			before = auths.Load()
			continue
		}
		n := auths.Load() - before
		t.Logf("%d authentications in %v (sessionTTL 2s; %d before)", n, span, before)
		// A stream dropped for an answer slower than a third of the
		// TTL (a loaded machine) opens again, authenticating once: at
		// load 43 three did. What this catches is a stream per keep-alive
		// or per wait, 15 or more; a third of that leaves the load room.
		if n > 5 {
			t.Errorf("%d authentications in %v while all went well, want at most 5 (a stream per keep-alive would make 15 or more)", n, span)
		}
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
}
