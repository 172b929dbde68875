package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/fleetbench"
	"github.com/cosid-go/store/internal/testing/rangebench"
)

// BenchmarkNext compares the store's Next (step 1, one key, through the
// user API) with a raw `UPDATE ... RETURNING` on another table of the same
// file, through a connection with the same settings (WAL,
// synchronous=FULL), interleaved one of each per iteration. Goal: 0.9x the
// raw throughput or better; vs-raw-timeout-x compares with the raw UPDATE
// under a per-call timeout; next-per-s is Next's own throughput.
// vs-unchecked-x compares Next with the same Next without the check that the
// path still names the store's file (stat before and after), also
// interleaved: the check's cost, goal 0.9x or better.
//
//	go test -run '^$' -bench Next -benchtime 3s ./drivers/sqlite/
func BenchmarkNext(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.db")
	d, err := fromOptions(map[string]string{"path": path})
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.OpenDriver(d)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	raw, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { raw.Close() })
	ctx := context.Background()
	if _, err := raw.Exec(`CREATE TABLE bench_raw (k TEXT PRIMARY KEY, v INTEGER NOT NULL); INSERT INTO bench_raw VALUES ('raw', 0)`); err != nil {
		b.Fatal(err)
	}
	upd, err := raw.Prepare(`UPDATE bench_raw SET v = v + ?2 WHERE k = ?1 RETURNING v`)
	if err != nil {
		b.Fatal(err)
	}
	defer upd.Close()
	r := st.Ranges()
	rawNext := func(ctx context.Context) {
		var v int64
		if err := upd.QueryRowContext(ctx, "raw", 1).Scan(&v); err != nil {
			b.Fatal(err)
		}
	}
	guard := d.(*driverStore).guard
	var inNext, inUnchecked, inRaw, inRawTimeout time.Duration
	b.ResetTimer()
	for range b.N {
		guard.off.Store(true)
		t0 := time.Now()
		if _, err := r.Next(ctx, "bench", 1); err != nil {
			b.Fatal(err)
		}
		inUnchecked += time.Since(t0)
		guard.off.Store(false)
		t0 = time.Now()
		if _, err := r.Next(ctx, "bench", 1); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		rawNext(ctx)
		t2 := time.Now()
		// The same under a per-call timeout, as the store applies to each
		// call: what the timeout itself costs.
		tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		rawNext(tctx)
		cancel()
		inNext += t1.Sub(t0)
		inRaw += t2.Sub(t1)
		inRawTimeout += time.Since(t2)
	}
	n := float64(b.N)
	b.ReportMetric(float64(inNext.Nanoseconds())/n, "next-ns/op")
	b.ReportMetric(float64(inRaw.Nanoseconds())/n, "raw-ns/op")
	b.ReportMetric(float64(inRaw)/float64(inNext), "vs-raw-x")
	b.ReportMetric(float64(inRawTimeout)/float64(inNext), "vs-raw-timeout-x")
	b.ReportMetric(float64(inUnchecked)/float64(inNext), "vs-unchecked-x")
	b.ReportMetric(n/inNext.Seconds(), "next-per-s")
}

// BenchmarkNextConcurrent: many goroutines on one key against 64 keys,
// coalescing on and off, one store and four on one file (package
// rangebench).
//
//	go test -run '^$' -bench NextConcurrent -benchtime 2000x ./drivers/sqlite/
func BenchmarkNextConcurrent(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.db")
	rangebench.Run(b, func(tb testing.TB) driver.Store {
		d, err := fromOptions(map[string]string{"path": path})
		if err != nil {
			tb.Fatal(err)
		}
		return d
	})
}

// BenchmarkFileCheck is the check each statement runs twice (before and
// after): three stats, of the file, its -wal and its -shm.
//
//	go test -run '^$' -bench FileCheck ./drivers/sqlite/
func BenchmarkFileCheck(b *testing.B) {
	d, err := fromOptions(map[string]string{"path": filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	g := d.(*driverStore).guard
	for b.Loop() {
		if err := g.check(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFleet: a fleet of instances on one host, each a store of its
// own on the same file, acquiring slots of one namespace at once (package
// fleetbench).
//
//	COSID_FLEET=250,1000 go test -run '^$' -bench Fleet -benchtime 1x ./drivers/sqlite/
func BenchmarkFleet(b *testing.B) {
	path := filepath.Join(b.TempDir(), "fleet.db")
	fleetbench.Run(b, func() (driver.Store, error) {
		return fromOptions(map[string]string{"path": path})
	})
}
