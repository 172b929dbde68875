package idgen_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/runs"
)

// TestLayoutKept runs testLayoutKept on the memory, SQLite and PostgreSQL
// drivers (ZooKeeper: TestZooKeeper).
func TestLayoutKept(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		opts := map[string]string{"connString": pgtest.Shared(t).ConnString(), "schema": fmt.Sprintf("layout_%d", os.Getpid())}
		testLayoutKept(t, func(t *testing.T) driver.Store { return rawDriver(t, "postgres", opts) })
	})
	t.Run("memory", func(t *testing.T) { testLayoutKept(t, memoryBackend(t)) })
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ids.db")
		testLayoutKept(t, func(t *testing.T) driver.Store { return rawDriver(t, "sqlite", map[string]string{"path": path}) })
	})
}

// testLayoutKept runs runs.LayoutKept on b.
func testLayoutKept(t *testing.T, b backend) {
	runs.LayoutKept(t, func(t *testing.T) *store.Store {
		st, _ := open(t, b)
		return st
	})
}
