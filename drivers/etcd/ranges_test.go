package etcd

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// openCounting opens a store on prefix whose client counts its unary
// calls (round trips).
func openCounting(t testing.TB, prefix string) (*store.Store, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	st := openDriver(t, prefix, interceptCalls(func(ctx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		calls.Add(1)
		return invoker(ctx, method, req, reply, cc, opts...)
	}))
	return st, &calls
}

func rawClient(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: sharedServer(t).Endpoints(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestNextOneRoundTrip: while the store is the only writer, each Next
// after the first is one round trip; after another store's write, one
// more (the failed compare carries the key).
func TestNextOneRoundTrip(t *testing.T) {
	prefix := freshPrefix("trips")
	st, calls := openCounting(t, prefix)
	ctx := t.Context()
	if _, err := st.Ranges().Next(ctx, "k", 10); err != nil {
		t.Fatal(err)
	}
	before := calls.Load()
	for range 20 {
		if _, err := st.Ranges().Next(ctx, "k", 10); err != nil {
			t.Fatal(err)
		}
	}
	if n := calls.Load() - before; n != 20 {
		t.Errorf("20 Next calls made %d round trips, want 20", n)
	}
	other, _ := openCounting(t, prefix)
	if _, err := other.Ranges().Next(ctx, "k", 10); err != nil {
		t.Fatal(err)
	}
	before = calls.Load()
	r, err := st.Ranges().Next(ctx, "k", 10)
	if err != nil || r.Start != 220 {
		t.Fatalf("Next after another store's = %v, %v; want start 220", r, err)
	}
	if n := calls.Load() - before; n != 2 {
		t.Errorf("Next after another store's write made %d round trips, want 2", n)
	}
}

// TestRangeRecreatedOrLowered: a key deleted and created again under a
// store that used it is refused (ErrRecreated), so is one deleted; one
// whose value went back is ErrCorrupt; none hands out a value again.
func TestRangeRecreatedOrLowered(t *testing.T) {
	ctx := t.Context()
	cli := rawClient(t)
	for _, tc := range []struct {
		name   string
		change func(k string)
		want   error
	}{
		{"Recreated", func(k string) {
			cli.Delete(ctx, k)
			cli.Put(ctx, k, "1000")
		}, driver.ErrRecreated},
		{"Deleted", func(k string) { cli.Delete(ctx, k) }, driver.ErrRecreated},
		{"Lowered", func(k string) { cli.Put(ctx, k, "5") }, driver.ErrCorrupt},
		{"Garbage", func(k string) { cli.Put(ctx, k, "12x") }, driver.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := freshPrefix("recreate")
			st, _ := openCounting(t, prefix)
			for range 3 {
				if _, err := st.Ranges().Next(ctx, "k", 10); err != nil {
					t.Fatal(err)
				}
			}
			tc.change(prefix + "/range/k")
			if r, err := st.Ranges().Next(ctx, "k", 10); !errors.Is(err, tc.want) {
				t.Errorf("Next = %v, %v; want %v", r, err, tc.want)
			}
		})
	}
}
