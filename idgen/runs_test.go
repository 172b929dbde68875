package idgen_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/cosid-go/store/drivers/postgres"
	_ "github.com/cosid-go/store/drivers/sqlite"
	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/runs"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestRunsOfOneOwner: processes given the same owner and the same
// store.WithIncarnation label (a pod name) never issue the same Snowflake
// ID, at once, restarted while the old one runs, or restarted after a
// crash with the clock 2s behind (see package internal/testing/runs), on SQLite,
// PostgreSQL and ZooKeeper.
func TestRunsOfOneOwner(t *testing.T) {
	runs.Child()
	const test = "TestRunsOfOneOwner"
	t.Run("sqlite", func(t *testing.T) {
		runs.Run(t, test, "sqlite", map[string]string{"path": filepath.Join(t.TempDir(), "ids.db"), "busyTimeout": "30s"})
	})
	t.Run("postgres", func(t *testing.T) {
		srv := pgtest.Shared(t)
		runs.Run(t, test, "postgres", map[string]string{"connString": srv.ConnString(), "schema": fmt.Sprintf("runs_%d", os.Getpid())})
	})
	t.Run("zookeeper", func(t *testing.T) {
		addr := zktest.StartServer(t, zktest.Versions()[0]).Addr()
		runs.Run(t, test, "zookeeper", zkOptions(t, addr))
	})
}
