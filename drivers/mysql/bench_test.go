package mysql

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/mysqltest"
	"github.com/cosid-go/store/internal/testing/rangebench"
)

// benchStore opens a store through the user API on a fresh database.
func benchStore(b *testing.B, srv *mysqltest.Server) (*store.Store, string) {
	database := srv.NewDatabase(b)
	d, err := fromOptions(map[string]string{"dsn": srv.DSN(""), "database": database, "poolSize": "4"})
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.OpenDriver(d)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st, database
}

// BenchmarkNext compares, on one server in the same run, the store's Next
// (step 1, one key, through the user API) with the fastest raw single
// statement that returns the new value on MySQL, an UPDATE that sets
// LAST_INSERT_ID(max_id + step) (one round trip; goal: 0.9x its
// throughput or better), and with Meituan Leaf's segment pattern, a
// transaction with an UPDATE then a SELECT of a leaf_alloc row. Both raw
// forms run on a pool of the same size, with parameters interpolated as
// the store's are. Each iteration runs one of each, interleaved, so drift
// of a loaded machine biases none; the ratios are throughputs (raw time /
// Next time).
//
//	go test -run '^$' -bench Next -benchtime 3s ./drivers/mysql/
func BenchmarkNext(b *testing.B) {
	srv := mysqltest.Shared(b)
	st, database := benchStore(b, srv)
	ctx := context.Background()
	pool, err := sql.Open("mysql", srv.DSN(database)+"&interpolateParams=true")
	if err != nil {
		b.Fatal(err)
	}
	pool.SetMaxOpenConns(4)
	b.Cleanup(func() { pool.Close() })
	for _, q := range []string{
		// Leaf's own schema (leaf-server's leaf_alloc).
		`CREATE TABLE leaf_alloc (biz_tag VARCHAR(128) NOT NULL DEFAULT '', max_id BIGINT NOT NULL DEFAULT 1,
			step INT NOT NULL, description VARCHAR(256) DEFAULT NULL,
			update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
			PRIMARY KEY (biz_tag)) ENGINE=InnoDB`,
		`INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('raw', 0, 1), ('leaf', 0, 1)`,
	} {
		if _, err := pool.ExecContext(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	rawCtx := func(ctx context.Context) {
		res, err := pool.ExecContext(ctx, `UPDATE leaf_alloc SET max_id = LAST_INSERT_ID(max_id + ?) WHERE biz_tag = ?`, 1, "raw")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := res.LastInsertId(); err != nil {
			b.Fatal(err)
		}
	}
	raw := func() { rawCtx(ctx) }
	// The same with a per-call timeout, as the store applies to each call:
	// shows what the timeout itself costs (go-sql-driver watches a
	// context that can end).
	rawTimeout := func() {
		tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		rawCtx(tctx)
		cancel()
	}
	leaf := func() {
		tx, err := pool.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = ?`, "leaf"); err != nil {
			b.Fatal(err)
		}
		var tag string
		var maxID int64
		var step int
		if err := tx.QueryRowContext(ctx, `SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag = ?`, "leaf").Scan(&tag, &maxID, &step); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	r := st.Ranges()
	next := func() {
		if _, err := r.Next(ctx, "bench", 1); err != nil {
			b.Fatal(err)
		}
	}
	next()
	raw()
	leaf()
	var inNext, inRaw, inRawTimeout, inLeaf time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		next()
		t1 := time.Now()
		raw()
		t2 := time.Now()
		leaf()
		t3 := time.Now()
		rawTimeout()
		inNext += t1.Sub(t0)
		inRaw += t2.Sub(t1)
		inLeaf += t3.Sub(t2)
		inRawTimeout += time.Since(t3)
	}
	n := float64(b.N)
	b.ReportMetric(float64(inNext.Nanoseconds())/n, "next-ns/op")
	b.ReportMetric(float64(inRaw.Nanoseconds())/n, "raw-ns/op")
	b.ReportMetric(float64(inLeaf.Nanoseconds())/n, "leaf-ns/op")
	b.ReportMetric(float64(inRaw)/float64(inNext), "vs-raw-x")
	b.ReportMetric(float64(inRawTimeout)/float64(inNext), "vs-raw-timeout-x")
	b.ReportMetric(float64(inLeaf)/float64(inNext), "vs-leaf-x")
}

// BenchmarkNextConcurrent: many goroutines on one key against 64 keys,
// coalescing on and off, one store and four (package rangebench).
//
//	go test -run '^$' -bench NextConcurrent -benchtime 2000x ./drivers/mysql/
func BenchmarkNextConcurrent(b *testing.B) {
	srv := mysqltest.Shared(b)
	database := srv.NewDatabase(b)
	rangebench.Run(b, func(tb testing.TB) driver.Store {
		d, err := fromOptions(map[string]string{"dsn": srv.DSN(""), "database": database})
		if err != nil {
			tb.Fatal(err)
		}
		return d
	})
}
