package main

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	_ "github.com/jackc/pgx/v5/stdlib"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/etcdtest"
	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// BenchmarkManyKeys measures a store holding many range keys and lock
// names (issue 40, "many keys"), on every driver: the listing of keys and
// of locks through the public API, then storectl inspect, migrate (into a
// fresh store of the same driver) and purge (of that target), in-process.
//
//	COSID_KEYS=100000,10000 go test -run '^$' -bench ManyKeys -benchtime 1x -timeout 60m .
//
// COSID_KEYS is N,M: N range keys k000000.. and M lock names l00000..
// (unset: the benchmark is skipped); COSID_KEYS_LIST_ONLY=1 stops after
// the listings (keys: Keys, all: RangeStore.All, locks: Locks().List,
// locks-all: Locker.All). COSID_KEYS_DRIVERS picks drivers
// (default memory,sqlite,postgres,zookeeper,etcd). Populating is setup,
// written in batches where the driver allows, and not timed. Each phase
// is a sub-benchmark reporting s/op, MB-alloc (bytes allocated during the
// phase) and MB-peak (the highest heap in use above the heap before it:
// the memory the phase holds at once). SQLite has no locks; etcd forgets
// a lock name at its last unlock, so its M names are held by one store
// while the locks are listed and inspected, then unlocked.
func BenchmarkManyKeys(b *testing.B) {
	raw := os.Getenv("COSID_KEYS")
	if raw == "" {
		b.Skip("set COSID_KEYS=N,M (range keys, lock names), e.g. 100000,10000")
	}
	var n, m int
	if _, err := fmt.Sscanf(raw, "%d,%d", &n, &m); err != nil || n < 1 || m < 0 {
		b.Fatalf("COSID_KEYS=%q: want N,M, e.g. 100000,10000", raw)
	}
	drivers := cmp.Or(os.Getenv("COSID_KEYS_DRIVERS"), "memory,sqlite,postgres,zookeeper,etcd")
	for d := range strings.SplitSeq(drivers, ",") {
		b.Run(d, func(b *testing.B) { manyKeys(b, d, n, m) })
	}
}

func manyKeys(b *testing.B, drv string, n, m int) {
	fresh, fill := manyKeysDriver(b, drv)
	src := fresh()
	start := time.Now()
	fill(src, n)
	st := src.open(b, store.WithTimeout(time.Minute))
	if drv == "sqlite" {
		m = 0
	}
	var held []*store.Lock
	if m > 0 {
		// etcd forgets a name at its last unlock, and ZooKeeper deletes
		// a lock's empty parent node soon after.
		held = manyLocks(b, st, m, drv == "etcd" || drv == "zookeeper")
	}
	b.Logf("%s: %d keys, %d lock names populated in %v", drv, n, m, time.Since(start).Round(time.Millisecond))
	ctx := context.Background()
	phase(b, "keys", func() {
		keys, err := st.Ranges().Keys(ctx)
		if err != nil || len(keys) != n {
			b.Fatalf("Keys: %d keys, %v; want %d", len(keys), err, n)
		}
	})
	phase(b, "all", func() {
		count := 0
		for _, err := range st.Ranges().All(ctx) {
			if err != nil {
				b.Fatal(err)
			}
			count++
		}
		if count != n {
			b.Fatalf("All: %d keys, want %d", count, n)
		}
	})
	if m > 0 {
		phase(b, "locks-all", func() {
			count := 0
			for _, err := range st.Locks().All(ctx) {
				if err != nil {
					b.Fatal(err)
				}
				count++
			}
			if count != m {
				b.Fatalf("Locks().All: %d names, want %d", count, m)
			}
		})
		phase(b, "locks", func() {
			names, err := st.Locks().List(ctx)
			if err != nil || len(names) != m {
				b.Fatalf("Locks().List: %d names, %v; want %d", len(names), err, m)
			}
		})
	}
	if os.Getenv("COSID_KEYS_LIST_ONLY") != "" {
		return
	}
	phase(b, "inspect", func() {
		var out lineCounter
		if code := run(with(args("inspect"), src.flags()), &out, &out); code != exitOK {
			b.Fatalf("inspect: exit %d: %s", code, out.tail)
		}
		if out.lines < int64(n) {
			b.Fatalf("inspect printed %d lines for %d keys", out.lines, n)
		}
	})
	for _, l := range held {
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	dst := fresh()
	created(b, dst)
	phase(b, "migrate", func() {
		var out lineCounter
		if code := run(with(args("migrate", "--from", src.spec(), "--to", dst.spec())), &out, &out); code != exitOK {
			b.Fatalf("migrate: exit %d: %s", code, out.tail)
		}
	})
	phase(b, "purge", func() {
		var out lineCounter
		if code := run(with(args("purge", "--yes", "--timeout", purgeTimeout), dst.flags()), &out, &out); code != exitOK {
			b.Fatalf("purge: exit %d: %s", code, out.tail)
		}
		if out.lines < int64(n) {
			b.Fatalf("purge printed %d lines for %d keys", out.lines, n)
		}
	})
}

// purgeTimeout bounds the purge, one store operation that deletes every
// key: ZooKeeper's of 100,000 keys passes the default 3 s.
const purgeTimeout = "2m"

// phase runs f once as a sub-benchmark and reports its time and memory.
func phase(b *testing.B, name string, f func()) {
	b.Run(name, func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			peak := heapSampler()
			b.StartTimer()
			f()
			b.StopTimer()
			top := peak()
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/1e6, "MB-alloc")
			b.ReportMetric(float64(max(top, before.HeapAlloc)-before.HeapAlloc)/1e6, "MB-peak")
		}
	})
}

// heapSampler samples the bytes of heap objects every millisecond until
// the returned function is called, which returns the highest.
func heapSampler() func() uint64 {
	const name = "/memory/classes/heap/objects:bytes"
	var top atomic.Uint64
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		s := []metrics.Sample{{Name: name}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > top.Load() {
				top.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); <-ended; return top.Load() }
}

// lineCounter counts the lines written to it and keeps the last few
// hundred bytes, for a failure's message; it allocates nothing per write,
// so that what a phase allocates is the command's.
type lineCounter struct {
	mu    sync.Mutex
	lines int64
	tail  []byte
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines += int64(bytes.Count(p, []byte("\n")))
	c.tail = append(c.tail, p[max(0, len(p)-600):]...)
	if n := len(c.tail); n > 600 {
		c.tail = append(c.tail[:0], c.tail[n-600:]...)
	}
	return len(p), nil
}

// manyLocks uses m lock names through the API, 32 at a time. With hold,
// the locks stay held (etcd keeps no name nobody holds) and are returned.
func manyLocks(b *testing.B, st *store.Store, m int, hold bool) []*store.Lock {
	held := make([]*store.Lock, m)
	work := make(chan int)
	var wg sync.WaitGroup
	var failed atomic.Value
	for range 32 {
		wg.Go(func() {
			for i := range work {
				l, err := st.Locks().TryLock(context.Background(), fmt.Sprintf("l%05d", i))
				if err == nil && !hold {
					err = l.Unlock(context.Background())
				}
				if err != nil {
					failed.CompareAndSwap(nil, err)
					continue
				}
				held[i] = l
			}
		})
	}
	for i := range m {
		work <- i
	}
	close(work)
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	if !hold {
		return nil
	}
	return held
}

// manyKeysDriver returns a maker of fresh stores of drv and a writer of
// n keys into one, k000000 at 10 and on, by the fastest way drv allows.
func manyKeysDriver(b *testing.B, drv string) (fresh func() storeSpec, fill func(storeSpec, int)) {
	key := func(i int) string { return fmt.Sprintf("k%06d", i) }
	byAPI := func(s storeSpec, n int) {
		st := s.open(b)
		for i := range n {
			if err := st.Ranges().Init(context.Background(), key(i), int64(10*(i+1))); err != nil {
				b.Fatal(err)
			}
		}
	}
	switch drv {
	case "memory":
		return func() storeSpec {
			return storeSpec{driver: "memory", options: map[string]string{"name": fmt.Sprintf("manykeys#%d", seq.Add(1))}}
		}, byAPI
	case "sqlite":
		return func() storeSpec {
				return storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(b.TempDir(), "s.db")}}
			}, func(s storeSpec, n int) {
				created(b, s)
				sqlExec(b, "sqlite", s.options["path"], "", n)
			}
	case "postgres":
		return func() storeSpec {
				return storeSpec{driver: "postgres", options: map[string]string{
					"connString": pgtest.Shared(b).ConnString(),
					"schema":     fmt.Sprintf("manykeys_%d_%d", os.Getpid(), seq.Add(1)),
					"poolSize":   "8",
				}}
			}, func(s storeSpec, n int) {
				created(b, s)
				sqlExec(b, "pgx", s.options["connString"], s.options["schema"]+".", n)
			}
	case "zookeeper":
		v := zktest.Versions()
		addr := servers.addr(b, v[len(v)-1])
		return func() storeSpec {
				return storeSpec{driver: "zookeeper", options: map[string]string{
					"connectString": addr, "root": randomRoot(b), "sessionTimeout": "20s",
				}}
			}, func(s storeSpec, n int) {
				st := s.open(b)
				if err := st.Ranges().Init(context.Background(), key(0), 10); err != nil {
					b.Fatal(err)
				}
				conn, _, err := zk.Connect([]string{addr}, 20*time.Second, zk.WithLogInfo(false))
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close()
				batches(b, n, 1000, func(lo, hi int) error {
					var ops []any
					for i := max(lo, 1); i < hi; i++ {
						ops = append(ops, &zk.CreateRequest{Path: s.options["root"] + "/range/" + key(i),
							Data: []byte(strconv.Itoa(10 * (i + 1))), Acl: zk.WorldACL(zk.PermAll)})
					}
					_, err := conn.Multi(ops...)
					return err
				})
			}
	case "etcd":
		return func() storeSpec { return etcdSpec(b, nil) }, func(s storeSpec, n int) {
			created(b, s)
			cli, err := clientv3.New(clientv3.Config{Endpoints: etcdtest.Shared(b).Endpoints(), DialTimeout: 20 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			defer cli.Close()
			batches(b, n, 100, func(lo, hi int) error {
				var ops []clientv3.Op
				for i := lo; i < hi; i++ {
					ops = append(ops, clientv3.OpPut(s.options["prefix"]+"/range/"+key(i), strconv.Itoa(10*(i+1))))
				}
				_, err := cli.Txn(context.Background()).Then(ops...).Commit()
				return err
			})
		}
	}
	b.Fatalf("COSID_KEYS_DRIVERS: unknown driver %q", drv)
	return nil, nil
}

// batches calls write for [lo, hi) batches of n, 4 at a time.
func batches(b *testing.B, n, size int, write func(lo, hi int) error) {
	var g sync.WaitGroup
	sem := make(chan struct{}, 4)
	var failed atomic.Value
	for lo := 0; lo < n; lo += size {
		sem <- struct{}{}
		g.Go(func() {
			defer func() { <-sem }()
			if err := write(lo, min(lo+size, n)); err != nil {
				failed.CompareAndSwap(nil, err)
			}
		})
	}
	g.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
}

// sqlExec writes n keys into the cosid_range table of a SQL store in one
// statement.
func sqlExec(b *testing.B, drv, dsn, prefix string, n int) {
	db, err := sql.Open(drv, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for lo := 0; lo < n; lo += 10000 {
		var rows []string
		for i := lo; i < min(lo+10000, n); i++ {
			rows = append(rows, fmt.Sprintf("('k%06d', %d, false)", i, 10*(i+1)))
		}
		if _, err := db.Exec("INSERT INTO " + prefix + "cosid_range (key, next, sealed) VALUES " + strings.Join(rows, ",")); err != nil {
			b.Fatal(err)
		}
	}
}
