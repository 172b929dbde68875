package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPaths: the metrics on /metrics only, with a call of the store and
// an ID issued in them; the status handlers on their own paths; any other
// path is 404, so a probe on a wrong path fails.
func TestPaths(t *testing.T) {
	ctx := context.Background()
	handler, seg, closeAll, err := setup(ctx, "memory", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	if _, err := seg.NextID(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}
	code, body := get("/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`cosid_store_operations_total{operation="Next",otel_scope_name="github.com/cosid-go/store/otelstore",otel_scope_schema_url="",otel_scope_version="devel",outcome="ok",store="memory"}`,
		`cosid_store_operation_duration_seconds_count{operation="Next"`,
		`cosid_idgen_ids_total{generator="segment",key="orders",otel_scope_name=`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the scrape lacks %s:\n%s", want, body)
		}
	}
	for path, want := range map[string]string{
		"/healthz":     "ok\n",
		"/readyz":      "ready\n",
		"/status":      "<code>orders</code>",
		"/status.json": `"key": "orders"`,
	} {
		if code, body := get(path); code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("%s: %d %q, want 200 with %q", path, code, body, want)
		}
	}
	for _, path := range []string{"/", "/healthz/x", "/metrics/x", "/anything"} {
		if code, _ := get(path); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, code)
		}
	}
}
