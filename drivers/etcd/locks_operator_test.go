package etcd

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/poll"
)

// TestLockOperatorEndsHold: an operator revokes the holder's session
// lease, or deletes its lock key, through the etcd API. The next waiter is
// granted at once (its watch sees the delete). Nothing the holder can do
// makes its Lost close before that grant: the server frees the lock in
// the same instant it could tell the holder. What the holder can and must
// do is learn it promptly, from its key's delete, not after a keep-alive
// (a third of the TTL later) or never (a deleted key leaves the lease
// alive): the test bounds the time both hold the lock.
func TestLockOperatorEndsHold(t *testing.T) {
	for _, how := range []string{"RevokeLease", "DeleteKey"} {
		t.Run(how, func(t *testing.T) {
			ctx := t.Context()
			ep := sharedServer(t).Endpoints()[0]
			prefix := freshPrefix("operator-lock")
			// A long TTL: a keep-alive is the holder's only news for 10s.
			holder, err := OpenStore(ctx, &Options{Endpoints: []string{ep}, Prefix: prefix, SessionTTL: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			other := openPlain(t, prefix) // on the shared member, ep
			l, err := holder.Locks().Lock(ctx, "op")
			if err != nil {
				t.Fatal(err)
			}
			granted := make(chan time.Time, 1)
			go func() {
				l2, err := other.Locks().Lock(ctx, "op")
				if err != nil {
					t.Errorf("the waiter's Lock: %v", err)
					close(granted)
					return
				}
				granted <- time.Now()
				<-ctx.Done()
				l2.Unlock(context.Background())
			}()
			waitQueued(t, holder, "op", 2)

			cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, Logger: zap.NewNop()})
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			resp, err := cli.Get(ctx, prefix+"/lock/op/", clientv3.WithFirstCreate()...)
			if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].CreateRevision != l.Fence() {
				t.Fatalf("the holder's key: %v, %v", resp, err)
			}
			kv := resp.Kvs[0]
			opAt := time.Now()
			if how == "RevokeLease" {
				_, err = cli.Revoke(ctx, clientv3.LeaseID(kv.Lease))
			} else {
				_, err = cli.Delete(ctx, string(kv.Key))
			}
			if err != nil {
				t.Fatal(err)
			}
			grantAt, ok := <-granted
			if !ok {
				return
			}
			select {
			case <-l.Lost():
				t.Logf("Lost already closed at the grant (%v after the operator)", grantAt.Sub(opAt).Round(time.Millisecond))
				return
			default:
			}
			select {
			case <-l.Lost():
				t.Logf("both held the lock for %v (grant %v after the operator)",
					time.Since(grantAt).Round(time.Millisecond), grantAt.Sub(opAt).Round(time.Millisecond))
			case <-time.After(3 * time.Second):
				t.Fatalf("two holders: the waiter was granted %v after the operator's %s, and 3s later the holder's Lost is still open",
					grantAt.Sub(opAt).Round(time.Millisecond), how)
			}
		})
	}
}

// TestLockAfterOperatorRevoke: an operator revokes the lease of a store
// that holds nothing (its session is still alive to it until the next
// keep-alive, a third of the TTL away). Its next Lock gets the lock, under
// a new session, rather than failing on the lease the server no longer has.
func TestLockAfterOperatorRevoke(t *testing.T) {
	ctx := t.Context()
	ep := sharedServer(t).Endpoints()[0]
	prefix := freshPrefix("revoke-idle")
	st, err := OpenStore(ctx, &Options{Endpoints: []string{ep}, Prefix: prefix, SessionTTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := st.Locks().Lock(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	cli := rawClient(t)
	resp, err := cli.Get(ctx, prefix+"/lock/r/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the hold's key: %v, %v", resp, err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	l, err = st.Locks().Lock(ctx, "r")
	if err != nil {
		t.Fatalf("Lock after the operator revoked the idle session: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Error(err)
	}
}

// TestLockDeleteWhileWatchBehind: the session's watch starts late, after
// an operator deleted the held key and the revisions up to now were
// compacted, so it cannot replay the delete. It reads the keys it watches
// instead, and the hold is lost.
func TestLockDeleteWhileWatchBehind(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("watch-behind")
	start := make(chan struct{})
	var once sync.Once
	st := openDriver(t, prefix, func(d *driverStore) {
		d.watchHook = func() { once.Do(func() { <-start }) }
	})
	l, err := st.Locks().Lock(ctx, "w")
	if err != nil {
		close(start)
		t.Fatal(err)
	}
	cli := rawClient(t)
	resp, err := cli.Delete(ctx, prefix+"/lock/w/", clientv3.WithPrefix())
	if err != nil || resp.Deleted != 1 {
		close(start)
		t.Fatalf("the operator's delete: %v, %v", resp, err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision); err != nil {
		close(start)
		t.Fatal(err)
	}
	close(start)
	select {
	case <-l.Lost():
		t.Logf("lost: %v", l.Unlock(ctx))
	case <-time.After(10 * time.Second):
		t.Fatal("the hold whose key was deleted before its watch started is not lost after 10s")
	}
}

// TestLockDeletedBeforeAnswer: an operator deletes a waiter key that its
// Lock created and was granted, before the Lock hears the answer; the
// session's watch reports the delete first. The hold that Lock returns is
// lost, not held with its key gone.
func TestLockDeletedBeforeAnswer(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("delete-early")
	answered := make(chan struct{})
	answer := sync.OnceFunc(func() { close(answered) })
	defer answer()
	var once sync.Once
	var armed atomic.Bool // from the Lock on
	var d *driverStore
	st := openDriver(t, prefix, func(s *driverStore) {
		d = s
		s.dialOpt = []grpc.DialOption{grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any,
			cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			err := invoker(ctx, method, req, reply, cc, opts...)
			if armed.Load() && strings.HasSuffix(method, "/Txn") {
				once.Do(func() { <-answered })
			}
			return err
		})}
	})
	// The name's watch runs from an earlier hold of the name (it outlives
	// the name's last key), as for a store locking a name again and again:
	// it can tell the delete before the create's answer.
	l0, err := st.Locks().Lock(ctx, "e")
	if err != nil {
		t.Fatal(err)
	}
	if err := l0.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan *store.Lock, 1)
	armed.Store(true)
	go func() {
		l, err := st.Locks().Lock(ctx, "e")
		if err != nil {
			t.Errorf("Lock: %v", err)
		}
		got <- l
	}()
	cli := rawClient(t)
	poll.Succeeds(t, 10*time.Second, "the operator deletes the waiter key", func() error {
		resp, err := cli.Delete(ctx, prefix+"/lock/e/", clientv3.WithPrefix())
		if err == nil && resp.Deleted != 1 {
			err = errors.New("no key yet")
		}
		return err
	})
	poll.Until(t, 10*time.Second, "the session's watch reports the delete", func() bool {
		ss := d.lastSession()
		for _, h := range ss.watched() {
			h.state.mu.Lock()
			seen := h.state.deleted != 0
			h.state.mu.Unlock()
			if seen {
				return true
			}
		}
		return false
	})
	answer()
	l := <-got
	if l == nil {
		return
	}
	select {
	case <-l.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("the hold whose key was deleted before Lock's answer is not lost after 10s")
	}
}
