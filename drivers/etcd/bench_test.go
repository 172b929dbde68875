package etcd

import (
	"context"
	"flag"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/etcdtest"
	"github.com/cosid-go/store/internal/testing/fleetbench"
	"github.com/cosid-go/store/internal/testing/lockscale"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// BenchmarkPaired measures, on the shared member in one run, each
// operation of the store against its baseline, alternately and timed
// apart, and reports speed: the baseline's time over the store's (1 is
// parity, above is faster), which load drifting between two separate runs
// cannot skew.
//
//   - Next: the store's Next (through the user API) against a raw
//     transaction doing the same, a compare on the mod revision the caller
//     remembers and a put: the least a correct Next can do; NextDriver the
//     same through the driver alone.
//
//   - Lock: the store's Lock and Unlock (fence, Lost rule and all) against
//     concurrency.Mutex's Lock and Unlock on a session, uncontended;
//     LockDriver the same through the driver alone, without the portable
//     layer (validation, timeout, observers).
//
//     go test -run '^$' -bench Paired -benchtime 2s ./
func BenchmarkPaired(b *testing.B) {
	b.Run("Next", func(b *testing.B) { benchNextPaired(b, false) })
	b.Run("NextDriver", func(b *testing.B) { benchNextPaired(b, true) })
	b.Run("Lock", func(b *testing.B) { benchLockPaired(b, false) })
	b.Run("LockDriver", func(b *testing.B) { benchLockPaired(b, true) })
}

// benchStore opens a store as a user would: no test instrumentation on its
// client (the baselines have none either).
func benchStore(b *testing.B) *store.Store {
	st, err := OpenStore(b.Context(), &Options{Endpoints: sharedServer(b).Endpoints(), Prefix: freshPrefix("bench")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

func benchNextPaired(b *testing.B, bare bool) {
	ctx := context.Background()
	st := benchStore(b)
	cli := rawClient(b)
	k := freshPrefix("raw") + "/k"
	resp, err := cli.Put(ctx, k, "0")
	if err != nil {
		b.Fatal(err)
	}
	mod, next := resp.Header.Revision, int64(0)
	if _, err := st.Ranges().Next(ctx, "k", 10); err != nil {
		b.Fatal(err)
	}
	rawNext := func() {
		tr, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", mod)).
			Then(clientv3.OpPut(k, strconv.FormatInt(next+10, 10))).Commit()
		if err != nil || !tr.Succeeded {
			b.Fatal(err)
		}
		mod, next = tr.Header.Revision, next+10
	}
	d := rawdriver.Of(st).(driver.RangeStore)
	mine := func() {
		var err error
		if bare {
			_, err = d.Next(ctx, "k", 10)
		} else {
			_, err = st.Ranges().Next(ctx, "k", 10)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	paired(b, rawNext, mine, "speed-vs-raw")
}

func benchLockPaired(b *testing.B, bare bool) {
	ctx := context.Background()
	st := benchStore(b)
	cli := rawClient(b)
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(60))
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	mu := concurrency.NewMutex(sess, freshPrefix("mutex"))
	d := rawdriver.Of(st).(driver.Locker)
	// The store's session lease is granted by its first Lock.
	if l, err := st.Locks().Lock(ctx, "bench"); err != nil {
		b.Fatal(err)
	} else if err := l.Unlock(ctx); err != nil {
		b.Fatal(err)
	}
	mutex := func() {
		if err := mu.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := mu.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	mine := func() {
		if bare {
			l, err := d.Lock(ctx, "bench", "o", true)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
			return
		}
		l, err := st.Locks().Lock(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	paired(b, mutex, mine, "speed-vs-mutex")
}

// paired times b.N calls of each, the baseline first on even rounds and
// second on odd ones (so neither always follows the other), and reports
// the baseline's total time over mine's as metric.
func paired(b *testing.B, baseline, mine func(), metric string) {
	var base, ours time.Duration
	b.ResetTimer()
	for i := range b.N {
		first, second := baseline, mine
		if i%2 == 1 {
			first, second = mine, baseline
		}
		t0 := time.Now()
		first()
		t1 := time.Now()
		second()
		t2 := time.Now()
		if i%2 == 1 {
			base, ours = base+t2.Sub(t1), ours+t1.Sub(t0)
		} else {
			base, ours = base+t1.Sub(t0), ours+t2.Sub(t1)
		}
	}
	b.ReportMetric(float64(base)/float64(ours), metric)
}

// BenchmarkFleet: a fleet of instances, each a store with a client of its
// own, acquiring slots of one namespace at once (package fleetbench), on a
// member of its own. Goal: 1,000 all held within 10 s, at most 3x the
// time of 250. With -v it logs, per acquire, the round trips, cuts and
// lost races (tripCounts).
//
//	COSID_FLEET=250,1000 go test -run '^$' -bench Fleet -benchtime 1x -v ./
func BenchmarkFleet(b *testing.B) {
	endpoints := strings.Join(etcdtest.Start(b, 1).Endpoints(), ",")
	prefix := freshPrefix("fleet")
	var counts []*tripCounts
	b.Cleanup(func() { logTrips(b, counts) })
	fleetbench.Run(b, func() (driver.Store, error) {
		d, err := fromOptions(map[string]string{"endpoints": endpoints, "prefix": prefix})
		if err != nil {
			return nil, err
		}
		c := &tripCounts{}
		d.(*driverStore).dialOpt = []grpc.DialOption{grpc.WithChainUnaryInterceptor(c.intercept)}
		countsMu.Lock()
		counts = append(counts, c)
		countsMu.Unlock()
		return d, nil
	})
}

var countsMu sync.Mutex

// tripCounts counts one fleet store's round trips of calls with attempt
// deadlines (Acquire's), those cut by their attempt deadline, and the
// transactions whose compares failed (a race lost).
type tripCounts struct {
	trips, cuts, lost, write atomic.Int64
}

func (c *tripCounts) intercept(ctx context.Context, method string, req, reply any,
	cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	marked := ctx.Value(attemptsKey{}) != nil
	err := invoker(ctx, method, req, reply, cc, opts...)
	if !marked {
		return err
	}
	c.trips.Add(1)
	if code := status.Code(err); err != nil && ctx.Err() == nil && (code == codes.DeadlineExceeded || code == codes.Unavailable) {
		c.cuts.Add(1)
	}
	if r, ok := req.(*pb.TxnRequest); ok && len(r.Compare) > 0 {
		c.write.Add(1)
		if t, ok := reply.(*pb.TxnResponse); ok && err == nil && !t.Succeeded {
			c.lost.Add(1)
		}
	}
	return err
}

// logTrips logs the counts per fleet size, the stores being opened in
// the order of the sizes, each size's runs (-count) one after the other.
func logTrips(b *testing.B, counts []*tripCounts) {
	runs := 1
	if f := flag.Lookup("test.count"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 1 {
			runs = n
		}
	}
	for _, n := range fleetbench.Sizes(b) {
		all := n * runs // this size's stores, all its runs
		if len(counts) < all {
			return
		}
		var trips, cuts, lost, write int64
		for _, c := range counts[:all] {
			trips, cuts, lost, write = trips+c.trips.Load(), cuts+c.cuts.Load(), lost+c.lost.Load(), write+c.write.Load()
		}
		counts = counts[all:]
		b.Logf("n=%d: per acquire %.2f round trips, %.2f cut, %.2f writes, %.2f lost races",
			n, float64(trips)/float64(all), float64(cuts)/float64(all), float64(write)/float64(all), float64(lost)/float64(all))
	}
}

// BenchmarkManyLockHolders: stores holding lock names of their own, with
// churn (package lockscale); msgs/unlock is the deletes of other stores'
// keys the sessions' watches told.
//
//	COSID_LOCKHOLDERS=200x50 go test -run '^$' -bench ManyLockHolders -benchtime 1x ./
func BenchmarkManyLockHolders(b *testing.B) {
	endpoints := etcdtest.Start(b, 1).Endpoints()
	prefix := freshPrefix("holders")
	heard := heardCount()
	lockscale.Report(b, heard.Open(func() *store.Store {
		return openDriverOn(b, endpoints, prefix, func(*driverStore) {})
	}), heard.Sum)
}
