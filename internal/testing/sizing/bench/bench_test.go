package bench_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/cosid-go/store/drivers/memory"
	_ "github.com/cosid-go/store/drivers/mysql"
	_ "github.com/cosid-go/store/drivers/postgres"
	_ "github.com/cosid-go/store/drivers/sqlite"
	_ "github.com/cosid-go/store/drivers/zookeeper"
	"github.com/cosid-go/store/internal/testing/fleetbench"
	"github.com/cosid-go/store/internal/testing/mysqltest"
	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/sizing"
	"github.com/cosid-go/store/internal/testing/zktest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Wrap(mysqltest.Wrap(zktest.Wrap(m))).Run()) }

// BenchmarkSizing prints the table of docs/sizing.md for the drivers of
// this module (etcd's is drivers/etcd's BenchmarkSizing): make sizing.
// COSID_SIZING_DRIVERS limits it to some rows (memory,sqlite,postgres,
// zookeeper,mysql).
//
//	go test -run '^$' -bench Sizing -benchtime 1x ./internal/testing/sizing/bench/
func BenchmarkSizing(b *testing.B) {
	sizing.Header(b)
	stamp := time.Now().UnixNano()
	rows := []struct {
		key   string
		start func(b *testing.B) sizing.Driver
	}{
		{"memory", func(*testing.B) sizing.Driver {
			return sizing.Driver{Name: "memory", Driver: "memory", Options: map[string]string{"name": fmt.Sprint("sizing-", stamp)}}
		}},
		{"sqlite", func(b *testing.B) sizing.Driver {
			return sizing.Driver{Name: "SQLite (one file)", Driver: "sqlite", Options: map[string]string{"path": filepath.Join(b.TempDir(), "ids.db")}}
		}},
		{"postgres", func(b *testing.B) sizing.Driver {
			srv := pgtest.StartSized(b, fleetbench.Limit+100)
			o := map[string]string{"connString": srv.ConnString(), "schema": "sizing"}
			return sizing.Driver{Name: "PostgreSQL", Driver: "postgres", Options: o,
				FleetOptions: map[string]string{"connString": srv.ConnString(), "schema": "sizing", "poolSize": "1"}}
		}},
		{"zookeeper", func(b *testing.B) sizing.Driver {
			addr := zktest.StartServer(b, "3.9").Addr()
			return sizing.Driver{Name: "ZooKeeper 3.9", Driver: "zookeeper", Options: map[string]string{"connectString": addr, "root": "/sizing"}}
		}},
		{"mysql", func(b *testing.B) sizing.Driver {
			srv := mysqltest.Start(b)
			return sizing.Driver{Name: "MariaDB", Driver: "mysql", Options: map[string]string{"dsn": srv.DSN(""), "database": "sizing"},
				FleetOptions: map[string]string{"dsn": srv.DSN(""), "database": "sizing", "poolSize": "1"}}
		}},
	}
	want := sizing.Selected(b)
	for _, r := range rows {
		if want != nil && !want[r.key] {
			continue
		}
		b.Run(r.key, func(b *testing.B) {
			for range b.N {
				sizing.Row(b, r.start(b))
			}
		})
	}
}
