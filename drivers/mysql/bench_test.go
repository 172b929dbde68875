package mysql

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/mysqltest"
	"github.com/cosid-go/store/internal/testing/rangebench"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// benchStore opens a store through the user API on a fresh database.
func benchStore(b *testing.B, srv *mysqltest.Server) (*store.Store, string) {
	database := srv.NewDatabase(b)
	o := map[string]string{"dsn": srv.DSN(""), "database": database, "poolSize": "4"}
	return rawdriver.OpenStore(b, fromOptions, o), database
}

// BenchmarkNext compares, on one server in the same run, the store's Next
// (step 1, one key, through the user API) with the fastest raw single
// statement that returns the new value on MySQL, an UPDATE that sets
// LAST_INSERT_ID(max_id + step) (one round trip; goal: 0.9x its
// throughput or better), and with Meituan Leaf's segment pattern, a
// transaction with an UPDATE then a SELECT of a leaf_alloc row. Both raw
// forms run on a pool of the same size, with parameters interpolated as
// the store's are (rangebench.Paired).
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
	raw := func(ctx context.Context) {
		res, err := pool.ExecContext(ctx, `UPDATE leaf_alloc SET max_id = LAST_INSERT_ID(max_id + ?) WHERE biz_tag = ?`, 1, "raw")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := res.LastInsertId(); err != nil {
			b.Fatal(err)
		}
	}
	leaf := func(ctx context.Context) {
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
	// vs-raw-timeout-x: raw under a per-call timeout, which go-sql-driver
	// watches with a goroutine; the store's pool does not (cutconn.go).
	rangebench.Paired(b, st, raw, leaf)
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

// BenchmarkNextLayers splits what a Next costs, as medians (a loaded
// machine's stalls swing means): through the user API (store-med-ns), the
// driver's Next alone with a context that cannot end (driver-med-ns), that
// can be cancelled (drivercancel-med-ns: cutconn.go's watch) and that has
// a deadline as the store's timeout gives each call (drivertimeout-med-ns:
// the watch and a runtime timer), and the statement Next runs on the
// store's pool (storepool-med-ns) and on a plain go-sql-driver pool
// (plainpool-med-ns). Each layer takes every place in the order in turn.
//
//	go test -run '^$' -bench NextLayers -benchtime 3s ./drivers/mysql/
func BenchmarkNextLayers(b *testing.B) {
	srv := mysqltest.Shared(b)
	st, database := benchStore(b, srv)
	d := rawdriver.Of(st).(*driverStore)
	ctx := context.Background()
	r := st.Ranges()
	if _, err := r.Next(ctx, "bench", 1); err != nil {
		b.Fatal(err)
	}
	pool, err := sql.Open("mysql", srv.DSN(database)+"&interpolateParams=true")
	if err != nil {
		b.Fatal(err)
	}
	pool.SetMaxOpenConns(4)
	b.Cleanup(func() { pool.Close() })
	upd := "UPDATE `" + database + "`.cosid_range SET next = LAST_INSERT_ID(next + ?) WHERE `key` = ? AND NOT sealed AND next <= 9223372036854775807 - ?"
	layers := []struct {
		name string
		f    func() error
	}{
		{"store", func() error { _, err := r.Next(ctx, "bench", 1); return err }},
		{"driver", func() error { _, err := d.Next(ctx, "bench", 1); return err }},
		{"drivercancel", func() error {
			c, cancel := context.WithCancel(ctx)
			defer cancel()
			_, err := d.Next(c, "bench", 1)
			return err
		}},
		{"drivertimeout", func() error {
			c, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			_, err := d.Next(c, "bench", 1)
			return err
		}},
		{"storepool", func() error { _, err := d.pool.ExecContext(ctx, upd, 1, "bench", 1); return err }},
		{"plainpool", func() error { _, err := pool.ExecContext(ctx, upd, 1, "bench", 1); return err }},
	}
	ts := make([][]time.Duration, len(layers))
	b.ResetTimer()
	for n := range b.N {
		for j := range layers {
			i := (n + j) % len(layers)
			t0 := time.Now()
			if err := layers[i].f(); err != nil {
				b.Fatal(err)
			}
			ts[i] = append(ts[i], time.Since(t0))
		}
	}
	for i, l := range layers {
		slices.Sort(ts[i])
		b.ReportMetric(float64(ts[i][len(ts[i])/2].Nanoseconds()), l.name+"-med-ns")
	}
}
