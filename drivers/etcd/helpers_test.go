package etcd

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/etcdtest"
	"github.com/cosid-go/store/internal/testing/netproxy"
	"github.com/cosid-go/store/internal/testing/poll"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// openDriver opens a store on prefix of the shared member, letting set
// change the driver (its test hooks) before it connects.
func openDriver(t testing.TB, prefix string, set func(d *driverStore)) *store.Store {
	t.Helper()
	return openDriverOn(t, sharedServer(t).Endpoints(), prefix, set)
}

// openDriverOn is openDriver on the given endpoints, with the store's
// options opts.
func openDriverOn(t testing.TB, endpoints []string, prefix string, set func(d *driverStore), opts ...store.Option) *store.Store {
	t.Helper()
	cfg, err := parseOptions(map[string]string{"endpoints": strings.Join(endpoints, ","), "prefix": prefix})
	if err != nil {
		t.Fatal(err)
	}
	d := newStore(cfg, nil)
	set(d)
	if err := d.Connect(t.Context()); err != nil {
		d.Close()
		t.Fatal(err)
	}
	st, err := store.OpenDriver(d, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// interceptCalls has a store's unary calls go through f first: set for
// openDriver, for the faults a test puts on the wire.
func interceptCalls(f grpc.UnaryClientInterceptor) func(d *driverStore) {
	return func(d *driverStore) { d.dialOpt = []grpc.DialOption{grpc.WithChainUnaryInterceptor(f)} }
}

// noKeepalive turns the client's keepalive (10s+5s) off: gRPC's "never"
// for the ping interval. In a test of a silent member, the only thing then
// that ends a round trip or a stream there is what the store does; a
// store that waited for the connection to close would wait for ever, not
// for a time a loaded machine can exceed.
var noKeepalive = grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: time.Duration(math.MaxInt64)})

// openPlain opens a store on prefix of the shared member, with no test
// hooks, closed when the test ends.
func openPlain(t testing.TB, prefix string) *store.Store {
	t.Helper()
	st, err := OpenStore(t.Context(), &Options{Endpoints: sharedServer(t).Endpoints(), Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// openPair opens two stores on prefix of the shared member, a holder and a
// waiter of the same locks, each closed when the test ends.
func openPair(t testing.TB, prefix string) (holder, waiter *store.Store) {
	t.Helper()
	return openPlain(t, prefix), openPlain(t, prefix)
}

// waitQueued polls Waiters until the lock has n entries (bounded).
func waitQueued(t *testing.T, st *store.Store, name string, n int) {
	t.Helper()
	poll.Until(t, 30*time.Second, fmt.Sprintf("lock %s has %d waiters", name, n), func() bool {
		ws, err := st.Locks().Waiters(t.Context(), name)
		return err == nil && len(ws) == n
	})
}

// lockResult is what a Lock run in the background returned.
type lockResult struct {
	l   *store.Lock
	err error
}

// holdAndQueue has holder lock name, then waiter queue behind it: the
// waiter's Lock runs in the background and returns on the channel.
func holdAndQueue(t *testing.T, holder, waiter *store.Store, name string) (*store.Lock, <-chan lockResult) {
	t.Helper()
	h, err := holder.Locks().Lock(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan lockResult, 1)
	go func() {
		l, err := waiter.Locks().Lock(t.Context(), name)
		got <- lockResult{l, err}
	}()
	waitQueued(t, holder, name, 2)
	return h, got
}

// awaitLock returns what the queued Lock returned, failing t when it has
// not returned within 60 s of its holder's Unlock (a bound for a loaded
// machine, not a wait).
func awaitLock(t *testing.T, got <-chan lockResult) lockResult {
	t.Helper()
	select {
	case r := <-got:
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("the waiter neither granted nor refused 60s after the holder's Unlock")
		return lockResult{}
	}
}

// openBeforeTxn opens a driver store whose nth transaction (a Txn call:
// a read or a write) once armed first runs hook: the test puts another
// store's calls between the store's reads and its write.
func openBeforeTxn(t *testing.T, prefix string, armed *atomic.Bool, nth int64, hook func()) *driverStore {
	t.Helper()
	return rawdriver.Of(openDriver(t, prefix, interceptCalls(beforeTxn(armed, nth, hook)))).(*driverStore)
}

// beforeTxn is the interceptor of openBeforeTxn: the nth transaction sent
// while armed first runs hook.
func beforeTxn(armed *atomic.Bool, nth int64, hook func()) grpc.UnaryClientInterceptor {
	var txns atomic.Int64
	return func(ctx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if strings.HasSuffix(method, "/Txn") && armed.Load() && txns.Add(1) == nth {
			hook()
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

// proxiedStores opens three stores on prefix of cluster c, each through
// proxies to every member and preferring another member first, with
// their call bound timeout; the proxies cut or freeze the connections.
func proxiedStores(t *testing.T, c *etcdtest.Cluster, prefix string, timeout time.Duration) ([]*store.Store, []*netproxy.Proxy) {
	t.Helper()
	var proxies []*netproxy.Proxy
	var eps []string
	for _, m := range c.Members {
		p := netproxy.New(t, strings.TrimPrefix(m.ClientURL, "http://"))
		proxies = append(proxies, p)
		eps = append(eps, p.Addr())
	}
	var stores []*store.Store
	for i := range 3 {
		order := append(append([]string(nil), eps[i:]...), eps[:i]...)
		st, err := store.Open("etcd", map[string]string{"endpoints": strings.Join(order, ","), "prefix": prefix, "dialTimeout": "1s"},
			store.WithTimeout(timeout))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stores = append(stores, st)
	}
	return stores, proxies
}

// releaseArmed releases l, the only term of namespace "n", at used with
// armed set, for the fault the test put on the write's answer (how), and
// fails the test unless the Release said it succeeded, the fault struck,
// and the slot is listed released with the next floor used+1.
func releaseArmed(t *testing.T, s *driverStore, l driver.Lease, used int64, armed *atomic.Bool, how string) {
	t.Helper()
	ctx := t.Context()
	armed.Store(true)
	if err := s.Release(ctx, l, used); err != nil {
		t.Errorf("Release whose write was applied, %s: %v; want nil", how, err)
	}
	if armed.Load() {
		t.Fatalf("the Release's write met no fault (%s)", how)
	}
	infos, err := s.Slots(ctx, "n")
	if err != nil || len(infos) != 1 {
		t.Fatalf("Slots: %+v, %v", infos, err)
	}
	if in := infos[0]; in.Owner != "" || in.NextFloor != used+1 {
		t.Errorf("slot after the release: owner %q, next floor %d; want released at %d", in.Owner, in.NextFloor, used+1)
	}
}
