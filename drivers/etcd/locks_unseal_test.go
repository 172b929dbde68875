package etcd

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosid-go/store"
)

// TestLockWaiterAcrossSealAndRaise: a waiter queued before SealLocks is
// never granted the lock (driver.LockSealer), even when RaiseLockFences
// undid the seal before its predecessor left (the locks moved out and back
// in meanwhile, their holders elsewhere holding fences up to the raise's
// floor, one of them perhaps still holding: a holder at a seal keeps its
// hold); were it granted, its fence would have to be above that floor.
// A waiter looks at the seal only when it reads its queue (its
// predecessor's delete, or every third of the session TTL): the raise
// records the revision of the seal it undid (locks_unsealed), which that
// look compares with the waiter's own create revision.
func TestLockWaiterAcrossSealAndRaise(t *testing.T) {
	ctx := t.Context()
	holder, waiter := openPair(t, freshPrefix("unseal"))
	h, got := holdAndQueue(t, holder, waiter, "x")
	floor, err := holder.Locks().Seal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raised := floor + 1_000_000 // the fences handed out elsewhere meanwhile
	if err := holder.Locks().RaiseFences(ctx, raised); err != nil {
		t.Fatal(err)
	}
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	switch r := awaitLock(t, got); {
	case r.err == nil:
		t.Errorf("a waiter queued before SealLocks (floor %d) was granted after it, the seal undone by RaiseLockFences(%d): fence %d",
			floor, raised, r.l.Fence())
		if r.l.Fence() <= raised {
			t.Errorf("and its fence %d is not above the raised floor %d", r.l.Fence(), raised)
		}
		r.l.Unlock(ctx)
	case !errors.Is(r.err, store.ErrSealed):
		t.Errorf("the waiter queued before SealLocks: %v, want ErrSealed", r.err)
	}
}

// openLateWrite opens a driver store whose next write transaction, once
// armed, is held back and reported lost (Unavailable, so the driver tries
// again); the held-back write is sent, and applied, when the test calls
// the function sent on late.
func openLateWrite(t *testing.T, prefix string, armed *atomic.Bool, late chan<- func()) *store.Store {
	t.Helper()
	return openDriver(t, prefix, interceptCalls(func(ctx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if tr, ok := req.(*pb.TxnRequest); ok && strings.HasSuffix(method, "/Txn") && len(tr.Success) > 0 &&
			isWrite(tr.Success[0]) && armed.CompareAndSwap(true, false) {
			late <- func() {
				if err := invoker(context.Background(), method, req, new(pb.TxnResponse), cc, opts...); err != nil {
					t.Errorf("the late write: %v", err)
				}
			}
			return status.Error(codes.Unavailable, "answer lost (test)")
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}))
}

func isWrite(op *pb.RequestOp) bool {
	return op.GetRequestPut() != nil || op.GetRequestDeleteRange() != nil
}

// TestLockLateSeal: a SealLocks whose first put's answer is lost returns
// after a retry; RaiseLockFences moves the locks back in; then the first
// put is applied. It must not seal the locks again: every write of the
// seal compares the fence offset key, which each raise rewrites.
func TestLockLateSeal(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("late-seal")
	var armed atomic.Bool
	late := make(chan func(), 1)
	sealer := openLateWrite(t, prefix, &armed, late)
	other, _ := openPair(t, prefix)
	armed.Store(true)
	if _, err := sealer.Locks().Seal(ctx); err != nil {
		t.Fatal(err)
	}
	send := <-late
	if err := other.Locks().RaiseFences(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	send() // the first seal put arrives after the raise
	if sealed, err := other.Locks().Sealed(ctx); err != nil || sealed {
		t.Errorf("LocksSealed after a raise and the seal's late first put: %v, %v; want false", sealed, err)
	}
	l, err := other.Locks().TryLock(ctx, "x")
	if err != nil {
		t.Fatalf("TryLock after the raise, the seal's late put applied: %v", err)
	}
	l.Unlock(ctx)
}

// TestLockLateRaise: the mirror: a RaiseLockFences whose first write's
// answer is lost returns after a retry; SealLocks seals the locks again;
// then the raise's first write is applied. It must not unseal them.
func TestLockLateRaise(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("late-raise")
	var armed atomic.Bool
	late := make(chan func(), 1)
	raiser := openLateWrite(t, prefix, &armed, late)
	other, _ := openPair(t, prefix)
	if _, err := other.Locks().Seal(ctx); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	if err := raiser.Locks().RaiseFences(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	send := <-late
	if _, err := other.Locks().Seal(ctx); err != nil {
		t.Fatal(err)
	}
	send() // the raise's first write arrives after the second seal
	if sealed, err := other.Locks().Sealed(ctx); err != nil || !sealed {
		t.Errorf("LocksSealed after a seal and a raise's late first write: %v, %v; want true", sealed, err)
	}
	if _, err := other.Locks().TryLock(ctx, "x"); !errors.Is(err, store.ErrSealed) {
		t.Errorf("TryLock after the second seal, a raise's late write applied: %v; want ErrSealed", err)
	}
}
