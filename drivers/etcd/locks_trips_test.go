package etcd

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"

	"github.com/cosid-go/store/internal/testing/poll"
)

// countingStream counts the watches a client asks its server to create.
type countingStream struct {
	grpc.ClientStream
	creates *atomic.Int64
}

func (c countingStream) SendMsg(m any) error {
	if r, ok := m.(*pb.WatchRequest); ok && r.GetCreateRequest() != nil {
		c.creates.Add(1)
	}
	return c.ClientStream.SendMsg(m)
}

// TestLockRoundTrips: an uncontended Lock and Unlock make two round trips,
// as concurrency.Mutex's do (a transaction that queues and reads the
// oldest key, a delete), and create no watch once the name was locked
// before: the session's watch of a name (the deletes of a held key reach
// its hold through it) outlives the name's last key.
func TestLockRoundTrips(t *testing.T) {
	var calls, watches atomic.Int64
	st := openDriver(t, freshPrefix("lock-trips"), func(d *driverStore) {
		d.dialOpt = []grpc.DialOption{
			grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any,
				cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				calls.Add(1)
				return invoker(ctx, method, req, reply, cc, opts...)
			}),
			grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn,
				method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
				cs, err := streamer(ctx, desc, cc, method, opts...)
				if err != nil {
					return nil, err
				}
				return countingStream{cs, &watches}, nil
			}),
		}
	})
	ctx := t.Context()
	lockUnlock := func() {
		l, err := st.Locks().Lock(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	lockUnlock() // grants the session's lease and starts its watches
	poll.Until(t, 10*time.Second, "the session's watches are created (the stream's keeper, the name)",
		func() bool { return watches.Load() == 2 })
	calls0, watches0 := calls.Load(), watches.Load()
	for range 20 {
		lockUnlock()
	}
	if n := calls.Load() - calls0; n != 40 {
		t.Errorf("20 Lock+Unlock made %d round trips, want 40", n)
	}
	if n := watches.Load() - watches0; n != 0 {
		t.Errorf("20 Lock+Unlock created %d watches, want 0", n)
	}
}
