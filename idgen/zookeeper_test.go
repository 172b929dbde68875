package idgen_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	_ "github.com/cosid-go/store/drivers/zookeeper"
	"github.com/cosid-go/store/idgen"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestZooKeeper runs the backend-swappable tests on real ZooKeeper, one
// server per version shared by the tests (each on a root of its own), and
// the outage test on a server of its own, since it stops it.
func TestZooKeeper(t *testing.T) {
	for _, version := range zktest.Versions() {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			addr := zktest.StartServer(t, version).Addr()
			for _, c := range []struct {
				name string
				run  func(*testing.T, backend)
			}{
				{"SegmentNoDuplicates", testSegmentNoDuplicates},
				{"SegmentStoreFailure", testSegmentStoreFailure},
				{"SessionRenews", testSessionRenews},
				{"SessionEndsBeforeExpiry", testSessionEndsBeforeExpiry},
				{"SnowflakeNoDuplicates", testSnowflakeNoDuplicates},
				{"SnowflakePausedHolder", testSnowflakePausedHolder},
				{"SnowflakeRestart", testSnowflakeRestart},
				{"SnowflakeIssuesBelowSealedCeiling", testSnowflakeIssuesBelowSealedCeiling},
				{"LayoutKept", testLayoutKept},
			} {
				t.Run(c.name, func(t *testing.T) { c.run(t, zkBackend(t, addr)) })
			}
			t.Run("SegmentOutage", func(t *testing.T) { testSegmentOutage(t, version) })
		})
	}
}

// zkBackend opens stores on a random root of the server at addr, so that
// they share state like processes of one application and see no other
// test's nodes.
func zkBackend(t *testing.T, addr string) backend {
	return zkRootBackend(zkOptions(t, addr))
}

// zkOptions are the options of test stores on a new random root of the
// server at addr. The bounds are generous: the machine is shared with
// other ZooKeeper tests.
func zkOptions(t *testing.T, addr string) map[string]string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"connectString":           addr,
		"root":                    "/t" + hex.EncodeToString(b[:]),
		"sessionTimeout":          "10s",
		"connectionTimeout":       "5s",
		"blockUntilConnectedWait": "20s",
	}
}

// zkRootBackend opens stores with opts; extra options override them.
func zkRootBackend(opts map[string]string, extra ...string) backend {
	opts = maps.Clone(opts)
	for i := 0; i+1 < len(extra); i += 2 {
		opts[extra[i]] = extra[i+1]
	}
	return func(t *testing.T) driver.Store {
		t.Helper()
		return rawDriver(t, "zookeeper", opts)
	}
}

// testSegmentOutage: with ZooKeeper stopped, a segment generator keeps
// serving from the ranges it fetched, then fails clearly, then resumes
// without duplicates once the server is back.
func testSegmentOutage(t *testing.T, version string) {
	srv := zktest.StartServer(t, version)
	opts := zkOptions(t, srv.Addr())
	// A short store timeout bounds how long a NextID waits on a dead server.
	const timeout = 2 * time.Second
	st, _ := open(t, zkRootBackend(opts, "connectionTimeout", "1s"), store.WithTimeout(timeout))
	// Another process on the key, patient enough to outlast the restart:
	// its retries end with its operation's timeout rather than their count.
	other, _ := open(t, zkRootBackend(opts, "retry.maxRetries", "1000"), store.WithTimeout(30*time.Second))

	// Step 10 with a prefetch distance of 15: NewSegment fetches [0, 10),
	// and [10, 20) is fetched at once after it.
	g := newSegment(t, st, "k", idgen.SegmentOptions{Step: 10, MinPrefetch: 15, MaxPrefetch: 15})
	eventually(t, "the prefetched range", func() bool { return g.Stats().Available == 20 })

	srv.Kill()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var ids []int64
	var err error
	for {
		var v int64
		if v, err = g.NextID(ctx); err != nil {
			break
		}
		ids = append(ids, v)
	}
	if len(ids) != 20 {
		t.Fatalf("served %d IDs with the server down, want the 20 fetched", len(ids))
	}
	want(t, ids, 0)
	unavailable := func(err error) {
		t.Helper()
		if !errors.Is(err, idgen.ErrNoRange) || ctx.Err() != nil {
			t.Fatalf("NextID with nothing fetched and the server down: %v, want ErrNoRange", err)
		}
	}
	unavailable(err)
	t.Logf("with the server down, after the %d fetched IDs: %v", len(ids), err)
	// While down it stays a clear failure, within the store timeout.
	begin := time.Now()
	_, err = g.NextID(ctx)
	unavailable(err)
	if d := time.Since(begin); d > timeout+5*time.Second {
		t.Errorf("NextID took %v to fail, with a store timeout of %v", d, timeout)
	}

	srv.Start()
	// Another process reserves values as soon as the server is back.
	r, err := other.Ranges().Next(ctx, "k", 25)
	if err != nil {
		t.Fatalf("another store after the restart: %v", err)
	}
	// The generator recovers on its own: while its connection comes back a
	// NextID may still fail, but only with ErrNoRange, each failure
	// bounded by the store timeout.
	for {
		v, err := g.NextID(ctx)
		if err == nil {
			ids = append(ids, v)
			break
		}
		if !errors.Is(err, idgen.ErrNoRange) || ctx.Err() != nil {
			t.Fatalf("NextID after the restart: %v", err)
		}
	}
	ids = append(ids, take(t, g, 40)...)
	increasing(t, "IDs across the outage", ids)
	for _, v := range ids {
		if r.Start <= v && v < r.End {
			t.Fatalf("ID %d is in [%d, %d), the range another store reserved after the restart", v, r.Start, r.End)
		}
	}
}
