package etcd

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
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
			other, err := OpenStore(ctx, &Options{Endpoints: []string{ep}, Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
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
