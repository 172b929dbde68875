package etcd

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/netproxy"
	"github.com/cosid-go/store/internal/testing/poll"
)

// TestLockCallsBoundedFrozen: with the network frozen while a Lock with a
// long context waits for the session's lease grant, a TryLock ends within
// the store timeout, a Lock within its context, and Close within a bound,
// none held up by the grant in flight.
func TestLockCallsBoundedFrozen(t *testing.T) {
	ctx := t.Context()
	ep := sharedServer(t).Endpoints()[0]
	p := netproxy.New(t, strings.TrimPrefix(ep, "http://"))
	var grants atomic.Int64
	st := openDriverOn(t, []string{p.Addr()}, freshPrefix("bound"), interceptCalls(func(ictx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if strings.HasSuffix(method, "/LeaseGrant") {
			grants.Add(1)
		}
		return invoker(ictx, method, req, reply, cc, opts...)
	}))
	p.Freeze()
	first := make(chan error, 1)
	go func() {
		lctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		_, err := st.Locks().Lock(lctx, "a")
		first <- err
	}()
	poll.Until(t, 10*time.Second, "the first Lock's lease grant is sent", func() bool { return grants.Load() > 0 })

	bounded := func(what string, bound time.Duration, f func() error) {
		t.Helper()
		start := time.Now()
		err := f()
		took := time.Since(start)
		t.Logf("%s: %v after %v", what, err, took.Round(time.Millisecond))
		if took > bound {
			t.Errorf("%s took %v, bound %v", what, took.Round(time.Millisecond), bound)
		}
	}
	timeout := st.Timeout() // the store's own: 3s
	bounded("TryLock", timeout+2*time.Second, func() error {
		_, err := st.Locks().TryLock(ctx, "b")
		if err == nil {
			t.Error("TryLock succeeded with the network frozen")
		}
		return err
	})
	bounded("Lock with a 1s context", 3*time.Second, func() error {
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := st.Locks().Lock(lctx, "c")
		if err == nil {
			t.Error("Lock succeeded with the network frozen")
		}
		return err
	})
	bounded("Close", 5*time.Second, st.Close)
	select {
	case err := <-first:
		if err == nil {
			t.Error("the first Lock succeeded with the network frozen")
		}
	case <-time.After(5 * time.Second):
		t.Error("the first Lock did not end within 5s of Close")
	}
}

// TestCloseBoundedFrozen: Close of a store holding a lock ends within a
// bound with the network frozen (its lease's revoke gets no answer).
func TestCloseBoundedFrozen(t *testing.T) {
	ctx := t.Context()
	ep := sharedServer(t).Endpoints()[0]
	p := netproxy.New(t, strings.TrimPrefix(ep, "http://"))
	st, err := OpenStore(ctx, &Options{Endpoints: []string{p.Addr()}, Prefix: freshPrefix("closebound")}, store.WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Locks().Lock(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	p.Freeze()
	start := time.Now()
	st.Close()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Close took %v with the network frozen, bound 5s", took.Round(time.Millisecond))
	}
}
