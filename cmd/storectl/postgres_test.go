package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/cosid-go/store/internal/testing/pgtest"
)

// Every command test also runs on a real PostgreSQL server (a schema of its
// own per store), and forEachPair migrates between PostgreSQL, ZooKeeper
// and memory in every direction.
func init() {
	backends = append(backends, backend{name: "postgres", fresh: func(t *testing.T) storeSpec {
		return storeSpec{driver: "postgres", options: map[string]string{
			"connString": pgtest.Shared(t).ConnString(),
			"schema":     fmt.Sprintf("storectl_%d_%d", os.Getpid(), seq.Add(1)),
			"poolSize":   "4",
		}}
	}})
}
