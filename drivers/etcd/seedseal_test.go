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

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// openBeforeWrite opens a driver store whose next transaction with a
// compare (a write), once armed, first runs hook: the test puts another
// store's call between the store's read and its write.
func openBeforeWrite(t *testing.T, prefix string, armed *atomic.Bool, hook func()) *driverStore {
	t.Helper()
	st := openDriver(t, prefix, func(d *driverStore) { d.dialOpt = beforeWrite(armed, hook) })
	return rawdriver.Of(st).(*driverStore)
}

// beforeWrite is the interceptor of openBeforeWrite.
func beforeWrite(armed *atomic.Bool, hook func()) []grpc.DialOption {
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if tr, ok := req.(*pb.TxnRequest); ok && strings.HasSuffix(method, "/Txn") && len(tr.Compare) > 0 && armed.CompareAndSwap(true, false) {
			hook()
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	})}
}

// TestSeedAfterSeal: a seed into an existing namespace reads it unsealed;
// another store seals the namespace (its SealNamespace returns) before
// the seed's write goes out. The seed must not land after the seal: it
// gives ErrSealed and the slot keeps its history.
func TestSeedAfterSeal(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("seedseal")
	sealer := openShifted(t, prefix, 0)
	var armed atomic.Bool
	sealed := make(chan error, 1)
	seeder := openBeforeWrite(t, prefix, &armed, func() { sealed <- sealer.SealNamespace(ctx, "n") })
	ns := driver.Namespace{Name: "n", Limit: 4, Tolerance: time.Second}
	if err := seeder.SeedSlot(ctx, ns, 0, 5, 100); err != nil { // the namespace exists
		t.Fatal(err)
	}
	armed.Store(true)
	err := seeder.SeedSlot(ctx, ns, 1, 50, 1000)
	if serr := <-sealed; serr != nil {
		t.Fatalf("SealNamespace between the seed's read and write: %v", serr)
	}
	if !errors.Is(err, store.ErrSealed) {
		t.Errorf("a seed whose write went out after SealNamespace returned: %v; want ErrSealed", err)
	}
	infos, lerr := sealer.Slots(ctx, "n")
	if lerr != nil {
		t.Fatal(lerr)
	}
	for _, in := range infos {
		if in.Slot == 1 {
			t.Errorf("slot 1 after the seal: fence %d, next floor %d; the seed landed after SealNamespace returned", in.Fence, in.NextFloor)
		}
	}
}
