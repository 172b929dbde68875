package main

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestScrape: a call of the store shows in the scraped metrics.
func TestScrape(t *testing.T) {
	ctx := context.Background()
	handler, st, closeAll, err := setup(ctx, "memory", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	if _, err := st.Ranges().Next(ctx, "orders", 100); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`cosid_store_operations_total{operation="Next",otel_scope_name="github.com/cosid-go/store/otelstore"`,
		`cosid_store_operation_duration_seconds_count{operation="Next"`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the scrape lacks %s:\n%s", want, body)
		}
	}
}
