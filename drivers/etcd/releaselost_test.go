package etcd

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// openLoseNextWrite opens a driver store whose next transaction with a
// compare (a write), once armed, is applied by the server and its answer
// dropped: the client sees Unavailable and retries.
// Then it runs after (if not nil) before the client sees the loss.
func openLoseNextWrite(t *testing.T, prefix string, armed *atomic.Bool, after func()) *driverStore {
	t.Helper()
	st := openDriver(t, prefix, interceptCalls(func(ctx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if tr, ok := req.(*pb.TxnRequest); ok && err == nil && strings.HasSuffix(method, "/Txn") && len(tr.Compare) > 0 &&
			armed.CompareAndSwap(true, false) {
			if after != nil {
				after()
			}
			return status.Error(codes.Unavailable, "answer lost (test)")
		}
		return err
	}))
	return rawdriver.Of(st).(*driverStore)
}

// TestReleaseLostAnswer: a Release whose write is applied and whose
// answer is lost is retried; the retry finds the term released by that
// very write. The Release succeeded and says so (nil), and the slot is
// free with the next floor the release wrote. A Renew likewise.
func TestReleaseLostAnswer(t *testing.T) {
	ctx := t.Context()
	var armed atomic.Bool
	s := openLoseNextWrite(t, freshPrefix("releaselost"), &armed, nil)
	ns := driver.Namespace{Name: "n", Limit: 2, Tolerance: time.Second}
	l, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "o", Incarnation: "i", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	nl, err := s.Renew(ctx, l)
	if err != nil || armed.Load() {
		t.Fatalf("Renew with its answer lost: %v (answer dropped: %v)", err, !armed.Load())
	}
	releaseArmed(t, s, nl, l.Floor+5, &armed, "whose answer was lost")
}

// TestReleaseLostAnswerTakenOver: as TestReleaseLostAnswer, but another
// store takes the released slot before the retry reads it: the slot then
// holds another term, yet the Release succeeded (its write was the first
// after the one it compared) and says so.
func TestReleaseLostAnswerTakenOver(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("releasetaken")
	other := openShifted(t, prefix, 0)
	ns := driver.Namespace{Name: "n", Limit: 1, Tolerance: time.Second}
	req := func(owner string) driver.AcquireRequest {
		return driver.AcquireRequest{Namespace: ns, Owner: owner, Incarnation: owner, TTL: time.Minute}
	}
	var armed atomic.Bool
	var taken driver.Lease
	takeErr := make(chan error, 1)
	s := openLoseNextWrite(t, prefix, &armed, func() {
		var err error
		taken, err = other.Acquire(ctx, req("b"))
		takeErr <- err
	})
	l, err := s.Acquire(ctx, req("a"))
	if err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	err = s.Release(ctx, l, l.Floor+5)
	if terr := <-takeErr; terr != nil {
		t.Fatalf("the other store's Acquire of the released slot: %v", terr)
	}
	if err != nil {
		t.Errorf("Release applied, answer lost, slot taken by another store since: %v; want nil", err)
	}
	if taken.Fence != l.Fence+1 || taken.Floor != l.Floor+6 {
		t.Errorf("the next term: fence %d, floor %d; want %d, %d (after the release)", taken.Fence, taken.Floor, l.Fence+1, l.Floor+6)
	}
}
