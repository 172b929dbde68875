package etcd

import (
	"context"
	"errors"
	"strings"
	"sync"
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

// TestSealOvertakenByNext: every time the Seal has read the key, another
// store's Next lands before the Seal's write (on a loaded machine the
// Seal's goroutine waits between the two while the fleet's Next calls go
// on). A lost race must go on from the value its failed compare carries,
// one round trip as Next's does: reading the key again before each retry
// left a window of two round trips that the other stores' Next calls,
// one round trip each, overtook again and again (a Seal during a CI run
// lost every race until its timeout). The Seal reads the key once, and
// seals above every range handed out.
func TestSealOvertakenByNext(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("sealovertaken")
	other := openShifted(t, prefix, 0)
	var (
		armed atomic.Bool
		reads atomic.Int64
		mu    sync.Mutex
		ends  []int64 // the ends of the other store's ranges
	)
	const overtakes = 50 // enough to outlast the Seal, bounded so a broken one ends
	sealer := openDriver(t, prefix, interceptCalls(func(ctx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err == nil && strings.HasSuffix(method, "/Range") && armed.Load() && reads.Add(1) <= overtakes {
			start, err := other.Next(t.Context(), "k", 10) // not the attempt's context
			if err != nil {
				t.Errorf("the other store's Next: %v", err)
			}
			mu.Lock()
			ends = append(ends, start+10)
			mu.Unlock()
		}
		return err
	}))
	if _, err := sealer.Ranges().Next(ctx, "k", 10); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	final, err := sealer.Ranges().Seal(ctx, "k")
	armed.Store(false)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("the Seal read the key %d times, each read overtaken by a Next; want 1 (a lost race goes on from its compare's answer)", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, end := range ends {
		if end > final {
			t.Errorf("the other store handed out values up to %d, above the sealed value %d", end, final)
		}
	}
	if next, sealed, err := other.Current(ctx, "k"); err != nil || !sealed || next != final {
		t.Errorf("Current after the Seal = %d, %v, %v; want %d, sealed", next, sealed, err, final)
	}
	if _, err := other.Next(ctx, "k", 10); !errors.Is(err, driver.ErrSealed) {
		t.Errorf("the other store's Next after the Seal: %v; want ErrSealed", err)
	}
}
