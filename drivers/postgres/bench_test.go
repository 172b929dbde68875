package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/fleetbench"
	"github.com/cosid-go/store/internal/testing/lockscale"
	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/rangebench"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// benchStore opens a store through the user API on a fresh schema.
func benchStore(b *testing.B, srv *pgtest.Server) (*store.Store, string) {
	schema := freshSchema("bench")
	o := map[string]string{"connString": srv.ConnString(), "schema": schema, "poolSize": "4"}
	return rawdriver.OpenStore(b, fromOptions, o), schema
}

// BenchmarkNext compares the store's Next with a raw single
// `UPDATE ... RETURNING` on a pool of the same size, and with Meituan
// Leaf's segment pattern (rangebench.Paired).
//
//	go test -run '^$' -bench Next -benchtime 3s ./drivers/postgres/
func BenchmarkNext(b *testing.B) {
	srv := pgtest.Shared(b)
	st, schema := benchStore(b, srv)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, srv.ConnString()+" pool_max_conns=4")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	tbl := pgx.Identifier{schema, "bench_raw"}.Sanitize()
	if _, err := pool.Exec(ctx, fmt.Sprintf(`CREATE TABLE %s (biz_tag TEXT PRIMARY KEY, max_id BIGINT NOT NULL, step INT NOT NULL);
		INSERT INTO %s VALUES ('raw', 0, 1), ('leaf', 0, 1)`, tbl, tbl)); err != nil {
		b.Fatal(err)
	}
	raw := func(ctx context.Context) {
		var v int64
		if err := pool.QueryRow(ctx, `UPDATE `+tbl+` SET max_id = max_id + $2 WHERE biz_tag = $1 RETURNING max_id`, "raw", 1).Scan(&v); err != nil {
			b.Fatal(err)
		}
	}
	leaf := func(ctx context.Context) {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `UPDATE `+tbl+` SET max_id = max_id + step WHERE biz_tag = $1`, "leaf"); err != nil {
				return err
			}
			var tag string
			var maxID int64
			var step int
			return tx.QueryRow(ctx, `SELECT biz_tag, max_id, step FROM `+tbl+` WHERE biz_tag = $1`, "leaf").Scan(&tag, &maxID, &step)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	rangebench.Paired(b, st, rangebench.Sides{Raw: raw, RawTimeout: raw, Leaf: leaf})
}

// BenchmarkSlots measures Acquire (of a free slot, then released) and
// Renew latencies on one server.
//
//	go test -run '^$' -bench Slots -benchtime 3s ./drivers/postgres/
func BenchmarkSlots(b *testing.B) {
	srv := pgtest.Shared(b)
	ns := store.Namespace{Name: "bench", Limit: 1024, Tolerance: time.Second}
	ctx := context.Background()
	b.Run("AcquireRelease", func(b *testing.B) {
		st, _ := benchStore(b, srv)
		var inAcquire time.Duration
		b.ResetTimer()
		for i := range b.N {
			t0 := time.Now()
			l, err := st.Slots().Acquire(ctx, ns, fmt.Sprintf("o%d", i%64), store.AcquireOptions{TTL: time.Minute})
			inAcquire += time.Since(t0)
			if err != nil {
				b.Fatal(err)
			}
			if err := st.Slots().Release(ctx, l); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(inAcquire.Nanoseconds())/float64(b.N), "acquire-ns/op")
	})
	b.Run("Renew", func(b *testing.B) {
		st, _ := benchStore(b, srv)
		l, err := st.Slots().Acquire(ctx, ns, "renewer", store.AcquireOptions{TTL: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			if l, err = st.Slots().Renew(ctx, l); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLockUnlock measures an uncontended Lock and Unlock pair.
//
//	go test -run '^$' -bench LockUnlock -benchtime 3s ./drivers/postgres/
func BenchmarkLockUnlock(b *testing.B) {
	st, _ := benchStore(b, pgtest.Shared(b))
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		l, err := st.Locks().Lock(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNextConcurrent: many goroutines on one key against 64 keys,
// coalescing on and off, one store and four, each with the default pool
// (package rangebench). Goal: one key at 0.7x of 64 keys or better with 64
// goroutines.
//
//	go test -run '^$' -bench NextConcurrent -benchtime 2000x ./drivers/postgres/
func BenchmarkNextConcurrent(b *testing.B) {
	srv := pgtest.Shared(b)
	schema := freshSchema("bench")
	rangebench.Run(b, func(tb testing.TB) driver.Store {
		d, err := fromOptions(map[string]string{"connString": srv.ConnString(), "schema": schema})
		if err != nil {
			tb.Fatal(err)
		}
		return d
	})
}

// BenchmarkFleet: a fleet of instances, each a store with a pool of one
// connection, acquiring slots of one namespace at once (package
// fleetbench), on a server of its own that admits them all. Goal: 1,000
// all held within 10 s, at most 3x the time of 250.
//
//	COSID_FLEET=250,1000 go test -run '^$' -bench Fleet -benchtime 1x ./drivers/postgres/
func BenchmarkFleet(b *testing.B) {
	srv := pgtest.StartSized(b, fleetbench.Limit+100)
	schema := freshSchema("fleet")
	fleetbench.Run(b, func() (driver.Store, error) {
		return fromOptions(map[string]string{"connString": srv.ConnString(), "schema": schema, "poolSize": "1"})
	})
}

// BenchmarkManyLockHolders: stores holding lock names of their own, with
// churn (package lockscale), each with a pool of one connection and its
// lock session's, on a server of its own that admits them all;
// msgs/unlock is the notifications that woke none of a store's waiters.
//
//	COSID_LOCKHOLDERS=200x50 go test -run '^$' -bench ManyLockHolders -benchtime 1x ./drivers/postgres/
func BenchmarkManyLockHolders(b *testing.B) {
	stores, _ := lockscale.Size(b)
	srv := pgtest.StartSized(b, 2*stores+100)
	schema := freshSchema("holders")
	heard := heardCount()
	lockscale.Report(b, heard.Open(func() *store.Store { return openLockScale(b, srv, schema) }), heard.Sum)
}

// openLockScale opens a store with a pool of one connection.
func openLockScale(tb testing.TB, srv *pgtest.Server, schema string) *store.Store {
	o := map[string]string{"connString": srv.ConnString(), "schema": schema, "poolSize": "1"}
	return rawdriver.OpenStore(tb, fromOptions, o)
}
