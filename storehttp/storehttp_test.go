package storehttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store"
	_ "github.com/cosid-go/store/drivers/memory"
	"github.com/cosid-go/store/idgen"
	"github.com/cosid-go/store/storehttp"
)

// setup opens a memory store watched by a Monitor and serves its handlers.
func setup(t *testing.T) (*storehttp.Monitor, *store.Store, *httptest.Server) {
	t.Helper()
	mon := storehttp.New(storehttp.Options{})
	st, err := store.Open("memory", map[string]string{"name": t.Name()}, store.WithObserver(mon.Observer()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	mon.Attach(st)
	mux := http.NewServeMux()
	mux.Handle("/healthz", mon.Live())
	mux.Handle("/readyz", mon.Ready())
	mux.Handle("/status", mon.Status())
	mux.Handle("/status.json", mon.StatusJSON())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return mon, st, srv
}

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func snapshot(t *testing.T, srv *httptest.Server) storehttp.Snapshot {
	t.Helper()
	code, body := get(t, srv, "/status.json")
	if code != http.StatusOK {
		t.Fatalf("/status.json: %d %s", code, body)
	}
	var s storehttp.Snapshot
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("/status.json: %v\n%s", err, body)
	}
	return s
}

// TestStatusShowsGeneratorsAndLocks: the page and its JSON show both
// generators, the lock held (and then released), and the store.
func TestStatusShowsGeneratorsAndLocks(t *testing.T) {
	ctx := context.Background()
	mon, st, srv := setup(t)
	seg, err := idgen.NewSegment(ctx, st, "orders", idgen.SegmentOptions{Step: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close(ctx)
	for range 3 {
		if _, err := seg.NextID(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sf, err := idgen.NewSnowflake(ctx, st, store.Namespace{Name: "workers", Limit: 8, Tolerance: time.Second}, "host-a",
		idgen.SnowflakeOptions{Acquire: store.AcquireOptions{TTL: time.Minute, Preferred: new(0)}})
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close(ctx)
	mon.Add(seg)
	mon.Add(sf)
	lock, err := st.Locks().Lock(ctx, "reindex")
	if err != nil {
		t.Fatal(err)
	}

	s := snapshot(t, srv)
	if !s.Ready || s.Store.Driver != "memory" || s.Store.PingError != "" {
		t.Errorf("store: ready %v, %+v", s.Ready, s.Store)
	}
	if len(s.Segments) != 1 || s.Segments[0].Key != "orders" || s.Segments[0].Issued != 3 ||
		s.Segments[0].Next != 3 || s.Segments[0].End != 100 || s.Segments[0].State != "ok" {
		t.Errorf("segments: %+v", s.Segments)
	}
	if len(s.Snowflakes) != 1 || s.Snowflakes[0].Namespace != "workers" || s.Snowflakes[0].State != "live" ||
		s.Snowflakes[0].LeftMs <= 0 || s.Snowflakes[0].LeftMs > time.Minute.Milliseconds() ||
		s.Snowflakes[0].Ceiling != s.Snowflakes[0].ExpiresAt+1000 {
		t.Errorf("snowflakes: %+v", s.Snowflakes)
	}
	if len(s.Locks) != 1 || s.Locks[0].Name != "reindex" || s.Locks[0].Fence != lock.Fence() || s.Locks[0].Since.IsZero() {
		t.Errorf("locks: %+v", s.Locks)
	}
	code, html := get(t, srv, "/status")
	if code != http.StatusOK {
		t.Fatalf("/status: %d", code)
	}
	for _, want := range []string{"<code>orders</code>", "<code>workers/0</code>", "<code>reindex</code>", `class="time-left"`, "lease_acquired"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(html, "<script") {
		t.Error("the page has a script")
	}

	if err := lock.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if s := snapshot(t, srv); len(s.Locks) != 0 {
		t.Errorf("after Unlock, locks: %+v", s.Locks)
	}
}

// TestReadySealedSegment: a Segment whose key was sealed makes readiness
// fail, naming the key.
func TestReadySealedSegment(t *testing.T) {
	ctx := context.Background()
	mon, st, srv := setup(t)
	if code, body := get(t, srv, "/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Fatalf("/readyz before: %d %q", code, body)
	}
	seg, err := idgen.NewSegment(ctx, st, "orders", idgen.SegmentOptions{Step: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close(ctx)
	mon.Add(seg)
	if _, err := st.Ranges().Seal(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := seg.NextID(ctx); err != nil {
			if !errors.Is(err, store.ErrSealed) {
				t.Fatalf("NextID after Seal: %v", err)
			}
			break
		}
	}
	code, body := get(t, srv, "/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `segment "orders": key sealed`) {
		t.Errorf("/readyz with a sealed segment: %d %q", code, body)
	}
	s := snapshot(t, srv)
	if s.Ready || len(s.ErrorKinds) == 0 || s.ErrorKinds[0].Kind != "sealed" {
		t.Errorf("snapshot: ready %v, error kinds %+v", s.Ready, s.ErrorKinds)
	}
	// Removed, it no longer counts.
	mon.Remove(seg)
	if code, _ := get(t, srv, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after Remove: %d", code)
	}
}

// TestReadyClosedStore: a store that no longer answers is not ready, while
// the process stays live.
func TestReadyClosedStore(t *testing.T) {
	_, st, srv := setup(t)
	st.Close()
	code, body := get(t, srv, "/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "closed") {
		t.Errorf("/readyz of a closed store: %d %q", code, body)
	}
	if code, body := get(t, srv, "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
}

// TestReadOnly: the handlers refuse what could write.
func TestReadOnly(t *testing.T) {
	_, _, srv := setup(t)
	for _, path := range []string{"/healthz", "/readyz", "/status", "/status.json"} {
		resp, err := srv.Client().Post(srv.URL+path, "text/plain", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: %d", path, resp.StatusCode)
		}
	}
}

// TestNoStore: a Monitor not yet attached is live but not ready.
func TestNoStore(t *testing.T) {
	mon := storehttp.New(storehttp.Options{})
	rec := httptest.NewRecorder()
	mon.Ready().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "no store attached") {
		t.Errorf("/readyz without a store: %d %q", rec.Code, rec.Body)
	}
}

// TestReadyLostLease: a Snowflake whose slot another process took over
// makes readiness fail, naming the slot and the cause.
func TestReadyLostLease(t *testing.T) {
	ctx := context.Background()
	mon, st, srv := setup(t)
	ns := store.Namespace{Name: "workers", Limit: 1}
	opts := idgen.SnowflakeOptions{Acquire: store.AcquireOptions{TTL: 3 * time.Second}}
	sf, err := idgen.NewSnowflake(ctx, st, ns, "host-a", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close(ctx)
	mon.Add(sf)
	if code, body := get(t, srv, "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz: %d %q", code, body)
	}
	// A restart of host-a in another process: same owner, another
	// incarnation, reclaiming the slot.
	other, err := store.Open("memory", map[string]string{"name": t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	opts.Acquire.Reclaim = true
	taker, err := idgen.NewSnowflake(ctx, other, ns, "host-a", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer taker.Close(ctx)
	select {
	case <-sf.Session().Done(): // its next renewal finds the slot taken
	case <-time.After(30 * time.Second):
		t.Fatal("the session did not end after its slot was taken over")
	}
	code, body := get(t, srv, "/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "snowflake workers/0: ") || !strings.Contains(body, "lease lost") {
		t.Errorf("/readyz with the lease lost: %d %q", code, body)
	}
	if s := snapshot(t, srv); len(s.Snowflakes) != 1 || s.Snowflakes[0].State != "lost" {
		t.Errorf("snowflakes: %+v", s.Snowflakes)
	}
}

// TestNothingSecret: a secret in an event's server or error is shown
// redacted, on the page and in its JSON.
func TestNothingSecret(t *testing.T) {
	_, st, srv := setup(t)
	st.Report(store.Event{Kind: store.Disconnected, Server: "postgres://ids:hunter2@db:5432/ids",
		Err: errors.New("dial db: password=hunter2 refused")})
	st.Report(store.Event{Kind: store.LockLost, Key: "reindex", Fence: 7,
		Err: errors.New("session of postgres://ids:hunter2@db/ids expired")})
	for _, path := range []string{"/status", "/status.json"} {
		_, body := get(t, srv, path)
		if strings.Contains(body, "hunter2") {
			t.Errorf("%s shows the password:\n%s", path, body)
		}
		if !strings.Contains(body, "***") {
			t.Errorf("%s shows no redacted value:\n%s", path, body)
		}
	}
	if s := snapshot(t, srv); len(s.LostLocks) != 1 || s.LostLocks[0].Name != "reindex" || !strings.Contains(s.LostLocks[0].Cause, "***") {
		t.Errorf("lost locks: %+v", s.LostLocks)
	}
}
