package etcd

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/cosid-go/store"
)

// TestLockCancelledDuringCreate: a Lock's context ends while its waiter
// key's create is applied but its answer is still on the way (a caller's
// cancel, no fault). The cancelled Lock must leave no trace (see
// driver.Locker.Lock): the store's other hold stays held, another store
// stays refused that lock, and the cancelled waiter's key goes. Found by
// the TCK's random histories: the cancel made the create an unknown
// outcome, which abandoned the session, so the store's hold of another
// name was lost and the next TryLock of it granted.
func TestLockCancelledDuringCreate(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("cancel-create")
	var armed atomic.Bool
	applied := make(chan struct{})
	answer := make(chan struct{})
	st := openDriver(t, prefix, interceptCalls(func(ictx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if strings.HasSuffix(method, "/Txn") && armed.CompareAndSwap(true, false) {
			err := invoker(ictx, method, req, reply, cc, opts...)
			close(applied)
			select {
			case <-answer: // the answer comes, after the caller gave up
				return err
			case <-ictx.Done(): // the call was cut: its answer is lost
				return status.FromContextError(ictx.Err()).Err()
			}
		}
		return invoker(ictx, method, req, reply, cc, opts...)
	}))
	other := openPlain(t, prefix)
	warmSession(t, st)
	held, err := st.Locks().TryLock(ctx, "l")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(ctx)

	armed.Store(true)
	lctx, cancel := context.WithCancel(ctx)
	result := make(chan error, 1)
	go func() {
		l, err := st.Locks().Lock(lctx, "k")
		if err == nil {
			l.Unlock(ctx)
		}
		result <- err
	}()
	<-applied // the key is on the server; its Lock has no answer yet
	cancel()
	err = <-result
	close(answer)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock cancelled during its create: %v, want context.Canceled", err)
	}
	wantHeld(t, held)
	if l2, err := other.Locks().TryLock(ctx, "l"); !errors.Is(err, store.ErrLocked) {
		if err == nil {
			l2.Unlock(ctx)
		}
		t.Fatalf("another store's TryLock of %q, held by this store: %v, want ErrLocked", "l", err)
	}
	// No trace: the cancelled waiter's key goes, and the name is free.
	waitForgotten(t, st, "k")
	l3, err := other.Locks().TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock of %q after its only waiter was cancelled: %v", "k", err)
	}
	l3.Unlock(ctx)
	wantHeld(t, held)
}
