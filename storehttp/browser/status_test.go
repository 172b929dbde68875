package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store"
	_ "github.com/cosid-go/store/drivers/postgres"
	_ "github.com/cosid-go/store/drivers/sqlite"
	"github.com/cosid-go/store/idgen"
	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/poll"
	"github.com/cosid-go/store/storehttp"
)

// app is what an application does: a store watched by a Monitor, a
// Segment and a Snowflake added to it, the handlers served.
type app struct {
	st  *store.Store
	seg *idgen.Segment
	sf  *idgen.Snowflake
	url string // of the status page
}

func startApp(t *testing.T, driverName string, options map[string]string, ttl time.Duration) *app {
	t.Helper()
	ctx := t.Context()
	mon := storehttp.New(storehttp.Options{RefreshEvery: -1}) // the test reloads
	st, err := store.Open(driverName, options, store.WithObserver(mon.Observer()), store.WithTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	mon.Attach(st)
	seg, err := idgen.NewSegment(ctx, st, "orders", idgen.SegmentOptions{Step: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { seg.Close(context.Background()) })
	sf, err := idgen.NewSnowflake(ctx, st, store.Namespace{Name: "workers", Limit: 16, Tolerance: time.Second}, "host-a",
		idgen.SnowflakeOptions{Acquire: store.AcquireOptions{TTL: ttl}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sf.Close(context.Background()) })
	for range 42 {
		if _, err := seg.NextID(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := sf.NextID(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mon.Add(seg)
	mon.Add(sf)
	mux := http.NewServeMux()
	mux.Handle("/status", mon.Status())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &app{st: st, seg: seg, sf: sf, url: srv.URL + "/status"}
}

// timeLeft reads the lease's time left off the page.
func timeLeft(t *testing.T, b *browser) time.Duration {
	t.Helper()
	s := b.text("#snowflakes .time-left")
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("the time left %q is not a duration: %v", s, err)
	}
	return d
}

// TestLeaseRenewed: on a SQLite store, the page shows the lease with its
// time left, and after a renewal the new expiry and renewal count.
func TestLeaseRenewed(t *testing.T) {
	const ttl = 6 * time.Second // renewed about every 2s
	a := startApp(t, "sqlite", map[string]string{"path": filepath.Join(t.TempDir(), "ids.db")}, ttl)
	b := newBrowser(t)
	b.load(a.url)
	if got := b.text("#ready"); got != "ready" {
		t.Errorf("readiness: %q", got)
	}
	if got := b.text("#segments td code"); got != "orders" {
		t.Errorf("segment key: %q", got)
	}
	if left := timeLeft(t, b); left <= 0 || left > ttl {
		t.Errorf("time left %v, want in (0, %v]", left, ttl)
	}
	renewals, err := strconv.ParseInt(b.text("#snowflakes .renewals"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	expires := b.text("#snowflakes .expires")

	poll.Until(t, 30*time.Second, "a renewal of the lease", func() bool { return a.sf.Stats().Renewals > renewals })
	b.load(a.url)
	after, err := strconv.ParseInt(b.text("#snowflakes .renewals"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if after <= renewals {
		t.Errorf("renewals shown after a renewal: %d, before %d", after, renewals)
	}
	if got := b.text("#snowflakes .expires"); got == expires {
		t.Errorf("the expiry shown did not move after a renewal: %s", got)
	}
	if left := timeLeft(t, b); left <= 0 || left > ttl {
		t.Errorf("time left after the renewal %v, want in (0, %v]", left, ttl)
	}
}

// TestServerOutage: on a PostgreSQL store, the page turns to not ready
// with the driver's disconnected state while the server is stopped, and
// back once it runs again. Nothing secret shows meanwhile. With
// STOREHTTP_SCREENSHOT set, it writes the README's screenshot first.
func TestServerOutage(t *testing.T) {
	srv := pgtest.Start(t)
	const password = "s3cret-pw" // accepted and ignored by the test server's trust auth
	host, port, _ := strings.Cut(srv.Addr(), ":")
	a := startApp(t, "postgres", map[string]string{
		"connString":     "postgres://postgres:" + password + "@" + host + ":" + port + "/postgres?sslmode=disable",
		"schema":         "browser",
		"poolSize":       "4",
		"connectTimeout": "1s",
		"lockTimeout":    "2s",
	}, 2*time.Minute) // outlives the outage and a slow restart on a loaded machine
	lock, err := a.st.Locks().Lock(t.Context(), "reindex")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock(context.Background())
	b := newBrowser(t)
	b.load(a.url)
	if got := b.text("#ready"); got != "ready" {
		t.Fatalf("readiness before the outage: %q", got)
	}
	if got := b.text("#locks td code"); got != "reindex" {
		t.Errorf("lock held: %q", got)
	}
	if left := timeLeft(t, b); left <= 0 {
		t.Errorf("time left %v", left)
	}
	if path := os.Getenv("STOREHTTP_SCREENSHOT"); path != "" {
		if err := b.screenshot(path); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot written to %s", path)
	}

	srv.Stop()
	poll.Succeeds(t, 30*time.Second, "the page showing the outage", func() error {
		b.load(a.url)
		if got := b.text("#ready"); got != "not ready" {
			return errorf("readiness %q", got)
		}
		if got := b.text("#connection"); !strings.HasPrefix(got, "disconnected") {
			return errorf("connection %q", got)
		}
		return nil
	})
	if got := b.text("#ping"); !strings.Contains(got, "no PostgreSQL server answered") {
		t.Errorf("the ping during the outage says %q", got)
	}
	if got := b.text("#error-kinds"); !strings.Contains(got, "unavailable") {
		t.Errorf("error kinds during the outage: %q", got)
	}
	if got := b.text("body"); strings.Contains(got, password) {
		t.Errorf("the page shows the password:\n%s", got)
	}

	srv.Restart(t)
	poll.Succeeds(t, 60*time.Second, "the page showing the recovery", func() error {
		b.load(a.url)
		if got := b.text("#ready"); got != "ready" {
			return errorf("readiness %q", got)
		}
		if got := b.text("#connection"); !strings.HasPrefix(got, "connected") {
			return errorf("connection %q", got)
		}
		return nil
	})
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
