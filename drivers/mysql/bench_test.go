package mysql

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/mysqltest"
	"github.com/cosid-go/store/internal/testing/rangebench"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// benchOptions are the options of the benchmarks' stores.
func benchOptions(srv *mysqltest.Server, database string) map[string]string {
	return map[string]string{"dsn": srv.DSN(""), "database": database, "poolSize": "4"}
}

// benchStore opens a store through the user API on a fresh database.
func benchStore(b *testing.B, srv *mysqltest.Server) (*store.Store, string) {
	database := srv.NewDatabase(b)
	return rawdriver.OpenStore(b, fromOptions, benchOptions(srv, database)), database
}

// plainPool opens a go-sql-driver pool with what a store's pool of
// options has: its DSN settings (parseOptions: parameters interpolated,
// ...), its size and the session settings each of its connections runs
// first (sessionSetup), but go-sql-driver's own connections, without the
// store's (cutconn.go).
func plainPool(b *testing.B, options map[string]string) *sql.DB {
	c, err := parseOptions(options)
	if err != nil {
		b.Fatal(err)
	}
	mc, err := mysql.NewConnector(c.cfg)
	if err != nil {
		b.Fatal(err)
	}
	pool := sql.OpenDB(setupConnector{mc, sessionSetup(c.lockTimeout)})
	pool.SetMaxOpenConns(c.poolSize)
	pool.SetMaxIdleConns(c.poolSize)
	b.Cleanup(func() { pool.Close() })
	return pool
}

// setupConnector runs setup on each new connection of c.
type setupConnector struct {
	c     sqldriver.Connector
	setup []string
}

func (s setupConnector) Connect(ctx context.Context) (sqldriver.Conn, error) {
	conn, err := s.c.Connect(ctx)
	if err != nil {
		return nil, err
	}
	for _, q := range s.setup {
		if _, err := conn.(sqldriver.ExecerContext).ExecContext(ctx, q, nil); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}

func (s setupConnector) Driver() sqldriver.Driver { return s.c.Driver() }

// BenchmarkNext compares, on one server in the same run, the store's Next
// (step 1, one key, through the user API) with the fastest raw single
// statement that returns the new value on MySQL, an UPDATE that sets
// LAST_INSERT_ID(next + step) (one round trip; goal: 0.9x its throughput
// or better), and with Meituan Leaf's segment pattern, a transaction with
// an UPDATE then a SELECT of a leaf_alloc row (rangebench.Paired).
//
// Each side has a pool of its own, with what the store's has (plainPool):
// the same DSN settings, size and session settings. The raw statement
// updates a table made LIKE the store's cosid_range (same engine, columns
// and key), a row of the same shape, and checks the count and value of
// its OK packet as the store does. What the store's statement does more,
// by its contract: it refuses a sealed key (AND NOT sealed, on the row it
// reads anyway; a step past math.MaxInt64 fails in the arithmetic both
// do). Its text is longer: a mark for the driver and the key's column,
// quoted.
//
//	go test -run '^$' -bench 'BenchmarkNext$' -benchtime 3s ./drivers/mysql/
func BenchmarkNext(b *testing.B) {
	srv := mysqltest.Shared(b)
	st, database := benchStore(b, srv)
	ctx := context.Background()
	o := benchOptions(srv, database)
	rawPool, timeoutPool, leafPool := plainPool(b, o), plainPool(b, o), plainPool(b, o)
	db := "`" + database + "`."
	for _, q := range []string{
		"CREATE TABLE " + db + "raw_range LIKE " + db + "cosid_range",
		"INSERT INTO " + db + "raw_range (`key`, next, sealed) VALUES ('bench', 0, FALSE)",
		// Leaf's own schema (leaf-server's leaf_alloc).
		`CREATE TABLE ` + db + `leaf_alloc (biz_tag VARCHAR(128) NOT NULL DEFAULT '', max_id BIGINT NOT NULL DEFAULT 1,
			step INT NOT NULL, description VARCHAR(256) DEFAULT NULL,
			update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
			PRIMARY KEY (biz_tag)) ENGINE=InnoDB`,
		`INSERT INTO ` + db + `leaf_alloc (biz_tag, max_id, step) VALUES ('leaf', 0, 1)`,
	} {
		if _, err := rawPool.ExecContext(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	rawNext := func(pool *sql.DB) func(context.Context) {
		q := "UPDATE " + db + "raw_range SET next = LAST_INSERT_ID(next + ?) WHERE `key` = ?"
		return func(ctx context.Context) {
			res, err := pool.ExecContext(ctx, q, 1, "bench")
			if err != nil {
				b.Fatal(err)
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				b.Fatal(n, err)
			}
			if _, err := res.LastInsertId(); err != nil {
				b.Fatal(err)
			}
		}
	}
	leaf := func(ctx context.Context) {
		tx, err := leafPool.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `UPDATE `+db+`leaf_alloc SET max_id = max_id + step WHERE biz_tag = ?`, "leaf"); err != nil {
			b.Fatal(err)
		}
		var tag string
		var maxID int64
		var step int
		if err := tx.QueryRowContext(ctx, `SELECT biz_tag, max_id, step FROM `+db+`leaf_alloc WHERE biz_tag = ?`, "leaf").Scan(&tag, &maxID, &step); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	// vs-raw-timeout-x: the raw statement under a per-call timeout, which
	// go-sql-driver watches with a goroutine; the store's pool does not
	// (cutconn.go).
	rangebench.Paired(b, st, rangebench.Sides{Raw: rawNext(rawPool), RawTimeout: rawNext(timeoutPool), Leaf: leaf})
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
// the watch and a runtime timer), the statement Next runs on the store's
// pool (storepool-med-ns) and on a plain go-sql-driver pool of the same
// settings (plainpool-med-ns), and on that pool the raw statement of
// BenchmarkNext on a table like cosid_range (rawstmt-med-ns). The layers
// run in an order shuffled each round: on a loaded machine the first call
// on a pool after calls on another is the slow one, and a fixed order
// gave that to the same layers each time.
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
	pool := plainPool(b, benchOptions(srv, database))
	db := "`" + database + "`."
	for _, q := range []string{
		"CREATE TABLE " + db + "raw_range LIKE " + db + "cosid_range",
		"INSERT INTO " + db + "raw_range (`key`, next, sealed) VALUES ('bench', 0, FALSE)",
	} {
		if _, err := pool.ExecContext(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	upd := "UPDATE " + db + "cosid_range SET next = LAST_INSERT_ID(next + ?) WHERE `key` = ? AND NOT sealed" // the dialect's NextUpdate
	raw := "UPDATE " + db + "raw_range SET next = LAST_INSERT_ID(next + ?) WHERE `key` = ?"
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
		{"storepool", func() error { _, err := d.pool.ExecContext(ctx, upd, 1, "bench"); return err }},
		{"plainpool", func() error { _, err := pool.ExecContext(ctx, upd, 1, "bench"); return err }},
		{"rawstmt", func() error { _, err := pool.ExecContext(ctx, raw, 1, "bench"); return err }},
	}
	ts := make([][]time.Duration, len(layers))
	order := make([]int, len(layers))
	for i := range order {
		order[i] = i
	}
	shuffle := rand.New(rand.NewPCG(1, 2)).Shuffle
	b.ResetTimer()
	for range b.N {
		shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, i := range order {
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
