package main

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkMigrate times migrate of n range keys from SQLite to etcd (a
// shared member on loopback), in-process, the plan and every move:
//
//	cd cmd/storectl && go test -run '^$' -bench 'Migrate/' -benchtime 1x .
//
// Each iteration migrates a fresh copy of one populated source file into
// a fresh etcd prefix; populating is not timed.
func BenchmarkMigrate(b *testing.B) {
	for _, n := range []int{4000, 20000} {
		b.Run(fmt.Sprintf("sqlite-etcd/keys=%d", n), func(b *testing.B) {
			template := populatedSQLite(b, n)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				path := filepath.Join(b.TempDir(), "src.db")
				copyFile(b, template, path)
				src := storeSpec{driver: "sqlite", options: map[string]string{"path": path}}
				dst := etcdSpec(b, nil)
				b.StartTimer()
				r := ctl("migrate", "--from", src.spec(), "--to", dst.spec())
				b.StopTimer()
				r.want(b, exitOK, fmt.Sprintf("done: %d keys", n))
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/float64(n)*1000, "µs/key")
		})
	}
}

// populatedSQLite makes a SQLite store with n keys k000000.. at 10·(i+1),
// written in one transaction beside the store's own tables (a Next per key
// would take a commit each).
func populatedSQLite(b testing.TB, n int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "template.db")
	st := storeSpec{driver: "sqlite", options: map[string]string{"path": path}}
	created(b, st)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var rows []string
	for i := range n {
		rows = append(rows, fmt.Sprintf("('k%06d', %d, false)", i, 10*(i+1)))
	}
	if _, err := db.Exec("INSERT INTO cosid_range (key, next, sealed) VALUES " + strings.Join(rows, ",")); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		b.Fatal(err)
	}
	return path
}
