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
	"github.com/cosid-go/store/internal/testing/netproxy"
	"github.com/cosid-go/store/internal/testing/poll"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// TestAcquireFromSlowMember: a member whose every answer comes later than
// the attempt deadline (as a fleet's thousand acquires queue up) still
// gives a slot. The read is waited for, not cut (awaitRead), and its late
// answer widens the next attempts' deadline; a cut write widens it too
// (and the answer that then comes sets it), rather than each resend being
// cut again until the call's own deadline, which fed the server's queue
// with resends. The term write, applied but cut before its answer came, is
// resolved by its resend's failed compare reading the term back: one
// term, written once, is the slot reported.
func TestAcquireFromSlowMember(t *testing.T) {
	p := netproxy.New(t, strings.TrimPrefix(sharedServer(t).Endpoints()[0], "http://"))
	var cuts, readCuts, writes atomic.Int64
	var armed atomic.Bool
	st := openDriverOn(t, []string{p.Addr()}, freshPrefix("slow"), func(d *driverStore) {
		d.dialOpt = []grpc.DialOption{grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any,
			cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			tr, write := req.(*pb.TxnRequest)
			write = write && len(tr.Compare) > 0 && armed.Load()
			if write && writes.Add(1) == 1 {
				p.Delay(2 * attemptMax) // past any attempt deadline
			}
			err := invoker(ctx, method, req, reply, cc, opts...)
			if status.Code(err) == codes.DeadlineExceeded && ctx.Err() == nil {
				cuts.Add(1)
				if !write {
					readCuts.Add(1)
				}
				if write {
					p.Delay(3 * attemptMin / 2) // the write's answer, and the resend's, come
				}
			}
			return err
		})}
	})
	s := rawdriver.Of(st).(*driverStore)
	ns := driver.Namespace{Name: "n", Limit: 4, Tolerance: time.Second}
	// A namespace made at full speed, and the answers' latencies learnt.
	if _, err := s.Acquire(t.Context(), driver.AcquireRequest{Namespace: ns, Owner: "fast", Incarnation: "i", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "the attempt deadline of fast answers", func() bool {
		return s.Ping(t.Context()) == nil && s.latency.deadline() == attemptMin
	})
	armed.Store(true)
	p.Delay(3 * attemptMin / 2)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start := time.Now()
	l, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "slow", Incarnation: "i", TTL: time.Minute})
	if err != nil {
		t.Fatalf("Acquire through a member answering %v late, after %v and %d cut attempts: %v", 3*attemptMin/2, time.Since(start), cuts.Load(), err)
	}
	p.Delay(0)
	if readCuts.Load() != 0 || cuts.Load() < 1 || writes.Load() < 2 {
		t.Fatalf("%d attempts cut (%d reads), %d term writes sent: want the write cut and sent again, no read cut",
			cuts.Load(), readCuts.Load(), writes.Load())
	}
	// The read, answered at 450ms, widens the deadline to 900ms; the
	// write cut there widens it to 1.8s, sent again: answered.
	if c := cuts.Load(); c > 2 {
		t.Errorf("%d attempts cut: the deadline did not widen", c)
	}
	resp, err := rawClient(t).Get(t.Context(), s.slotKey("n", l.Slot))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("slot key of the lease: %v, %v", resp, err)
	}
	var r driver.SlotRecord
	if err := r.UnmarshalBinary(resp.Kvs[0].Value); err != nil {
		t.Fatal(err)
	}
	if resp.Kvs[0].Version != 1 || r.Owner != "slow" || r.Fence != l.Fence {
		t.Errorf("slot %d: version %d, owner %q, fence %d; want the lease's one term (fence %d), written once",
			l.Slot, resp.Kvs[0].Version, r.Owner, r.Fence, l.Fence)
	}
}
