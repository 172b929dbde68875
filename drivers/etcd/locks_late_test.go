package etcd

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/poll"
)

// TestLockLateCleanupDelete: a Lock's create is applied but every answer
// is lost until its context ends, so its key's revision is unknown to the
// cleanup; the cleanup's first delete is reported failed but reaches the
// server later, after a second one succeeded and the store's next Lock of
// the name holds a key of the same name again. That late delete must not
// end the new hold: another store stays refused while the holder holds.
func TestLockLateCleanupDelete(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("late-delete")
	var loseTxn, holdDelete atomic.Bool
	late := make(chan func(), 1)
	st := openDriver(t, prefix, interceptCalls(func(ictx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		switch {
		case loseTxn.Load() && strings.HasSuffix(method, "/Txn"):
			invoker(ictx, method, req, reply, cc, opts...) // applied
			<-ictx.Done()                                  // the answer never comes
			return status.Error(codes.DeadlineExceeded, "answer lost (test)")
		case strings.HasSuffix(method, "/DeleteRange") && holdDelete.CompareAndSwap(true, false):
			late <- func() { invoker(context.Background(), method, req, reply, cc, opts...) }
			return status.Error(codes.Unavailable, "answer lost (test)")
		}
		return invoker(ictx, method, req, reply, cc, opts...)
	}))
	// A session first, so that the lossy Txn is the waiter's create.
	warmSession(t, st)
	loseTxn.Store(true)
	holdDelete.Store(true)
	lctx, cancel := context.WithTimeout(ctx, time.Second)
	_, err := st.Locks().Lock(lctx, "o")
	cancel()
	loseTxn.Store(false)
	if err == nil {
		t.Fatal("the Lock whose create lost every answer succeeded")
	}
	// The cleanup is done once the name is forgotten by the listing.
	waitForgotten(t, st, "o")
	held, err := st.Locks().Lock(ctx, "o")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(ctx)
	select {
	case send := <-late:
		send() // the first cleanup delete arrives late
	default: // no delete by name was made
	}
	other := openPlain(t, prefix)
	l2, err := other.Locks().TryLock(ctx, "o")
	if err == nil {
		lost := "open"
		select {
		case <-held.Lost():
			lost = "closed"
		default:
		}
		l2.Unlock(ctx)
		t.Fatalf("another store was granted %q while this store holds it (holder's Lost %s): a late cleanup delete removed the hold's key", "o", lost)
	}
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("TryLock of a held lock: %v, want ErrLocked", err)
	}
	wantHeld(t, held)
}

// TestLockLateCreateOrphan: a Lock's create loses its answer and the Lock
// gives up; the create reaches the server only after the Lock returned,
// as a proposal forwarded by a member whose peer link stalled can. On the
// store's live session lease the key would block the name for every other
// store as long as the store runs: the unknown create abandons the session
// instead, so the late create fails (no lease) or goes with the lease.
func TestLockLateCreateOrphan(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("late-create")
	var armed atomic.Bool
	late := make(chan func(), 1)
	st := openDriver(t, prefix, interceptCalls(func(ictx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if armed.Load() && strings.HasSuffix(method, "/Txn") {
			armed.Store(false)
			// Sent as a call of its own: the cut call's options and reply
			// are still its interceptors' (a Lock returns before its
			// create's answer is settled).
			late <- func() { invoker(context.Background(), method, req, new(pb.TxnResponse), cc) }
			<-ictx.Done() // the answer never comes; the Lock gives up
			return status.Error(codes.DeadlineExceeded, "answer lost (test)")
		}
		return invoker(ictx, method, req, reply, cc, opts...)
	}))
	// A session first, so that the armed Txn is the waiter's create.
	warmSession(t, st)
	armed.Store(true)
	lctx, cancel := context.WithTimeout(ctx, time.Second)
	_, err := st.Locks().Lock(lctx, "o")
	cancel()
	if err == nil {
		t.Fatal("the Lock whose create lost its answer succeeded")
	}
	send := <-late
	waitForgotten(t, st, "o")
	send() // the create arrives late
	other := openPlain(t, prefix)
	octx, ocancel := context.WithTimeout(ctx, 10*time.Second)
	defer ocancel()
	l2, err := other.Locks().Lock(octx, "o")
	if err != nil {
		ws, _ := st.Locks().Waiters(ctx, "o")
		t.Fatalf("another store cannot lock %q for 10s while nobody holds it: %v (queue: %+v, an orphan of the live session first)", "o", err, ws)
	}
	l2.Unlock(ctx)
}

// warmSession locks and unlocks a name on st, so that its session exists
// and the next transaction is a lock's create.
func warmSession(t *testing.T, st *store.Store) {
	t.Helper()
	l, err := st.Locks().Lock(t.Context(), "warm")
	if err != nil {
		t.Fatal(err)
	}
	l.Unlock(t.Context())
}

// wantHeld stops the test if held was lost.
func wantHeld(t *testing.T, held *store.Lock) {
	t.Helper()
	select {
	case <-held.Lost():
		t.Fatalf("the hold was lost: %v", held.Unlock(t.Context()))
	default:
	}
}

// waitForgotten waits until the store lists nobody holding or waiting for
// name.
func waitForgotten(t *testing.T, st *store.Store, name string) {
	t.Helper()
	poll.Until(t, 10*time.Second, "lock "+name+" has no waiters", func() bool {
		_, err := st.Locks().Waiters(t.Context(), name)
		return errors.Is(err, store.ErrNotFound)
	})
}

// TestLockCreateRefusedOnce: a waiter create the server refuses (here
// every transaction, as a permission error would) abandons the session,
// as its outcome is not known to be nothing, but fails the Lock at once:
// it does not queue again, granting a lease per attempt, until its
// context ends.
func TestLockCreateRefusedOnce(t *testing.T) {
	ctx := t.Context()
	var refuse atomic.Bool
	var grants atomic.Int64
	st := openDriver(t, freshPrefix("refused"), interceptCalls(func(ictx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		switch {
		case strings.HasSuffix(method, "/LeaseGrant"):
			grants.Add(1)
		case refuse.Load() && strings.HasSuffix(method, "/Txn"):
			return status.Error(codes.PermissionDenied, "refused (test)")
		}
		return invoker(ictx, method, req, reply, cc, opts...)
	}))
	refuse.Store(true)
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := st.Locks().Lock(lctx, "r")
	if err == nil || !strings.Contains(err.Error(), "refused (test)") {
		t.Fatalf("Lock whose create is refused: %v, want the refusal", err)
	}
	if took := time.Since(start); took > 3*time.Second || grants.Load() > 1 {
		t.Errorf("Lock whose create is refused took %v and %d lease grants, want an error at once after one", took, grants.Load())
	}
}

// TestLockLateComparedDelete: a waiter whose context ended behind a
// holder is deleted in the background; the first delete is reported
// failed but reaches the server only after a second one succeeded and the
// store's next Lock of the name holds a key of the same name (its number
// reused). The late delete compares the old key's create revision, and
// leaves the new hold alone.
func TestLockLateComparedDelete(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("late-compared")
	var holdDelete atomic.Bool
	late := make(chan func(), 1)
	st := openDriver(t, prefix, interceptCalls(func(ictx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if tr, ok := req.(*pb.TxnRequest); ok && len(tr.Success) == 1 && tr.Success[0].GetRequestDeleteRange() != nil &&
			holdDelete.CompareAndSwap(true, false) {
			late <- func() { invoker(context.Background(), method, req, reply, cc, opts...) }
			return status.Error(codes.Unavailable, "answer lost (test)")
		}
		return invoker(ictx, method, req, reply, cc, opts...)
	}))
	other := openPlain(t, prefix)
	first, err := other.Locks().Lock(ctx, "o")
	if err != nil {
		t.Fatal(err)
	}
	holdDelete.Store(true)
	lctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = st.Locks().Lock(lctx, "o")
	cancel()
	if err == nil {
		t.Fatal("Lock of a held lock succeeded")
	}
	send := <-late
	waitQueued(t, other, "o", 1) // the second delete succeeded
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	held, err := st.Locks().Lock(ctx, "o")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(ctx)
	send()
	if l2, err := other.Locks().TryLock(ctx, "o"); !errors.Is(err, store.ErrLocked) {
		if err == nil {
			l2.Unlock(ctx)
		}
		t.Fatalf("TryLock of a held lock after a late delete: %v, want ErrLocked", err)
	}
	wantHeld(t, held)
}
