package zookeeper

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// BenchmarkLocks compares, on one server per version, the store's lock
// (through the user API) with go-zookeeper's own zk.Lock on the same
// server in the same run:
//
//   - Uncontended: one goroutine locks and unlocks one name.
//   - Handoff: 8 goroutines on 4 connections (stores) take turns on one
//     name; an op is one acquisition and its release, so ns/op is the
//     handoff time under contention.
//   - Uncontended/Paired: one op of each, alternately, timed apart; it
//     reports store-speed (zk.Lock's time over the store's, so 1 is parity
//     and above is faster), which a machine whose load drifts between the
//     two separate runs above cannot skew.
//
// zk.Lock takes 3 round trips per uncontended op: create, list, delete.
// The store takes 2: its create (a multi whose answer carries the fence)
// with the listing sent right behind it, then delete (lock_create.go). It
// also tracks its nodes for Lost and cleanup, and runs each call on a
// goroutine so that it honours its context.
//
//	go test -run '^$' -bench Locks -benchtime 3s ./drivers/zookeeper/
func BenchmarkLocks(b *testing.B) {
	zktest.EachVersion(b, func(b *testing.B, srv *zktest.Server) {
		addr := srv.Addr()
		b.Run("Uncontended/Store", func(b *testing.B) { benchLockUncontended(b, addr) })
		b.Run("Uncontended/ZkLock", func(b *testing.B) { benchZkLockUncontended(b, addr) })
		b.Run("Uncontended/Paired", func(b *testing.B) { benchLockPaired(b, addr) })
		b.Run("Handoff/Store", func(b *testing.B) { benchLockHandoff(b, addr) })
		b.Run("Handoff/ZkLock", func(b *testing.B) { benchZkLockHandoff(b, addr) })
	})
}

const benchContenders, benchConns = 8, 4

func benchLockUncontended(b *testing.B, addr string) {
	st := portable(b, openTest(b, testOptions(addr, nil), nil))
	ctx := context.Background()
	k := st.Locks()
	b.ResetTimer()
	for range b.N {
		l, err := k.Lock(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func benchZkLockUncontended(b *testing.B, addr string) {
	lk := zk.NewLock(rawConn(b, addr), randomRoot()+"/bench", zk.WorldACL(zk.PermAll))
	b.ResetTimer()
	for range b.N {
		if err := lk.Lock(); err != nil {
			b.Fatal(err)
		}
		if err := lk.Unlock(); err != nil {
			b.Fatal(err)
		}
	}
}

// contend runs benchContenders goroutines, each calling take with its own
// index until b.N turns are taken in all. Goroutine g uses connection
// g % benchConns.
func contend(b *testing.B, take func(g int) error) {
	var (
		left atomic.Int64
		wg   sync.WaitGroup
	)
	left.Store(int64(b.N))
	b.ResetTimer()
	for g := range benchContenders {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := take(g); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func benchLockHandoff(b *testing.B, addr string) {
	opts := testOptions(addr, nil)
	ctx := context.Background()
	stores := make([]*store.Store, benchConns)
	for i := range stores {
		stores[i] = portable(b, openTest(b, opts, nil))
	}
	// The parents exist before the clock starts, as for zk.Lock below.
	if err := benchTurn(ctx, stores[0]); err != nil {
		b.Fatal(err)
	}
	contend(b, func(g int) error { return benchTurn(ctx, stores[g%benchConns]) })
}

func benchTurn(ctx context.Context, st *store.Store) error {
	l, err := st.Locks().Lock(ctx, "bench")
	if err != nil {
		return err
	}
	return l.Unlock(ctx)
}

func benchZkLockHandoff(b *testing.B, addr string) {
	path := randomRoot() + "/bench"
	conns := make([]*zk.Conn, benchConns)
	for i := range conns {
		conns[i] = rawConn(b, addr)
	}
	// A zk.Lock is not safe for concurrent use: one per goroutine.
	locks := make([]*zk.Lock, benchContenders)
	for g := range locks {
		locks[g] = zk.NewLock(conns[g%benchConns], path, zk.WorldACL(zk.PermAll))
	}
	if err := locks[0].Lock(); err != nil { // creates the parents
		b.Fatal(err)
	}
	if err := locks[0].Unlock(); err != nil {
		b.Fatal(err)
	}
	contend(b, func(g int) error {
		if err := locks[g].Lock(); err != nil {
			return err
		}
		return locks[g].Unlock()
	})
}

func benchLockPaired(b *testing.B, addr string) {
	st := portable(b, openTest(b, testOptions(addr, nil), nil))
	k := st.Locks()
	lk := zk.NewLock(rawConn(b, addr), randomRoot()+"/bench", zk.WorldACL(zk.PermAll))
	ctx := context.Background()
	var storeTime, zkTime time.Duration
	b.ResetTimer()
	for range b.N {
		began := time.Now()
		l, err := k.Lock(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if err := lk.Lock(); err != nil {
			b.Fatal(err)
		}
		if err := lk.Unlock(); err != nil {
			b.Fatal(err)
		}
		storeTime += mid.Sub(began)
		zkTime += time.Since(mid)
	}
	b.ReportMetric(float64(zkTime)/float64(storeTime), "store-speed")
}
