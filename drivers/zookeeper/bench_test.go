package zookeeper

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/fleetbench"
	"github.com/cosid-go/store/internal/testing/lockscale"
	"github.com/cosid-go/store/internal/testing/rangebench"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// BenchmarkRanges compares, on one server per version, the store's Next
// (step 1, one key, through the user API with its per-operation timeout)
// with a bare compare-and-set loop written straight on go-zookeeper in the
// same style: remember the version, Set on it, re-read on a conflict. The
// goal is Next at 0.9x the raw loop's throughput or better.
//
// Next and RawCAS run one after the other; Interleaved alternates one Next
// and one raw compare-and-set per iteration and reports both latencies and
// their ratio, which drift of a loaded machine cannot bias.
//
//	go test -run '^$' -bench Ranges -benchtime 3s ./drivers/zookeeper/
func BenchmarkRanges(b *testing.B) {
	zktest.EachVersion(b, func(b *testing.B, srv *zktest.Server) {
		addr := srv.Addr()
		b.Run("Next", func(b *testing.B) {
			next := benchStore(b, addr)
			b.ResetTimer()
			for range b.N {
				next()
			}
		})
		b.Run("RawCAS", func(b *testing.B) {
			cas := newRawCAS(b, addr)
			b.ResetTimer()
			for range b.N {
				cas.next()
			}
		})
		b.Run("Interleaved", func(b *testing.B) {
			next, cas := benchStore(b, addr), newRawCAS(b, addr)
			var inNext, inRaw time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				next()
				t1 := time.Now()
				cas.next()
				inNext += t1.Sub(t0)
				inRaw += time.Since(t1)
			}
			b.ReportMetric(float64(inNext.Nanoseconds())/float64(b.N), "next-ns/op")
			b.ReportMetric(float64(inRaw.Nanoseconds())/float64(b.N), "raw-ns/op")
			b.ReportMetric(float64(inRaw)/float64(inNext), "throughput-ratio")
		})
	})
}

// benchStore returns a function calling Next(step 1) on a fresh key of a
// store on addr.
func benchStore(b *testing.B, addr string) func() {
	st := portable(b, openTest(b, testOptions(addr, nil), nil))
	r := st.Ranges()
	ctx := context.Background()
	next := func() {
		if _, err := r.Next(ctx, "bench", 1); err != nil {
			b.Fatal(err)
		}
	}
	next() // creates the node
	return next
}

// rawCAS is the hand-written loop on go-zookeeper.
type rawCAS struct {
	b       *testing.B
	conn    *zk.Conn
	path    string
	value   int64
	version int32
}

func newRawCAS(b *testing.B, addr string) *rawCAS {
	c := &rawCAS{b: b, conn: rawConn(b, addr), path: randomRoot()}
	if _, err := c.conn.Create(c.path, formatRange(0, false), 0, zk.WorldACL(zk.PermAll)); err != nil {
		b.Fatal(err)
	}
	c.read()
	return c
}

func (c *rawCAS) read() {
	data, stat, err := c.conn.Get(c.path)
	if err != nil {
		c.b.Fatal(err)
	}
	if c.value, _, _, err = parseRange(data); err != nil {
		c.b.Fatal(err)
	}
	c.version = stat.Version
}

func (c *rawCAS) next() {
	for {
		stat, err := c.conn.Set(c.path, formatRange(c.value+1, false), c.version)
		if err == nil {
			c.value, c.version = c.value+1, stat.Version
			return
		}
		if !errors.Is(err, zk.ErrBadVersion) {
			c.b.Fatal(err)
		}
		c.read()
	}
}

// BenchmarkNextConcurrent: many goroutines on one key against 64 keys,
// coalescing on and off, one store and four (package rangebench). Goal:
// one key at 0.7x of 64 keys or better with 64 goroutines.
//
//	COSID_ZK_VERSIONS=3.8 go test -run '^$' -bench NextConcurrent -benchtime 2000x ./drivers/zookeeper/
func BenchmarkNextConcurrent(b *testing.B) {
	zktest.EachVersion(b, func(b *testing.B, srv *zktest.Server) {
		addr := srv.Addr()
		root := randomRoot()
		rangebench.Run(b, func(tb testing.TB) driver.Store {
			return openTest(tb, testOptions(addr, map[string]string{"root": root}), nil)
		})
	})
}

// BenchmarkFleet: a fleet of instances, each a store with a session of its
// own, acquiring slots of one namespace at once (package fleetbench).
// Goal: 1,000 all held within 10 s, at most 3x the time of 250.
//
//	COSID_ZK_VERSIONS=3.8 COSID_FLEET=250,1000 go test -run '^$' -bench Fleet -benchtime 1x ./drivers/zookeeper/
func BenchmarkFleet(b *testing.B) {
	zktest.EachVersion(b, func(b *testing.B, srv *zktest.Server) {
		addr := srv.Addr()
		root := randomRoot()
		fleetbench.Run(b, func() (driver.Store, error) {
			return open(map[string]string{"connectString": addr, "root": root}, nil)
		})
	})
}

// BenchmarkManyLockHolders: stores holding lock names of their own, with
// churn (package lockscale), each with a session of its own; msgs/unlock
// is the watches that fired (a waiter watches only its predecessor).
//
//	COSID_ZK_VERSIONS=3.8 COSID_LOCKHOLDERS=200x50 go test -run '^$' -bench ManyLockHolders -benchtime 1x ./drivers/zookeeper/
func BenchmarkManyLockHolders(b *testing.B) {
	zktest.EachVersion(b, func(b *testing.B, srv *zktest.Server) {
		addr := srv.Addr()
		root := randomRoot()
		fired := firedCount()
		lockscale.Report(b, fired.Open(func() *store.Store {
			return portable(b, openTest(b, testOptions(addr, map[string]string{"root": root, "sessionTimeout": "20s"}), nil))
		}), fired.Sum)
	})
}
