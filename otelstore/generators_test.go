package otelstore_test

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/idgen"
	"github.com/cosid-go/store/otelstore"
)

// TestGeneratorCounters: the IDs each generator issued, and a Segment's
// refills and waits, by key or slot; a removed generator is no longer
// reported.
func TestGeneratorCounters(t *testing.T) {
	r := newReader(t)
	m := newMetrics(t, r)
	st := observed(t, m)
	ctx := context.Background()
	seg, err := idgen.NewSegment(ctx, st, "orders", idgen.SegmentOptions{Step: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close(ctx)
	sf, err := idgen.NewSnowflake(ctx, st, store.Namespace{Name: "w", Limit: 4}, "host", idgen.SnowflakeOptions{Acquire: store.AcquireOptions{Preferred: new(0)}}) // the slot the labels name
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close(ctx)
	m.Add(seg)
	m.Add(sf)
	for range 7 {
		if _, err := sf.NextID(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Sealed, the key gives no more ranges: the values in hand run out,
	// and the call that finds none left waits for a refill that fails.
	if _, err := st.Ranges().Seal(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	issued := 0
	for {
		if _, err := seg.NextID(ctx); err != nil {
			if !errors.Is(err, store.ErrSealed) {
				t.Fatal(err)
			}
			break
		}
		issued++
	}
	stats := seg.Stats()
	if stats.Waits < 1 || stats.Issued != int64(issued) {
		t.Fatalf("segment stats %+v, %d issued", stats, issued)
	}
	rm := r.collect()
	segment := []attribute.KeyValue{attribute.String("generator", "segment"), attribute.String("key", "orders")}
	want(t, rm, float64(issued), "cosid.idgen.ids", segment...)
	want(t, rm, float64(stats.Fetches), "cosid.idgen.segment.refills", segment...)
	want(t, rm, float64(stats.Waits), "cosid.idgen.segment.waits", segment...)
	want(t, rm, 7, "cosid.idgen.ids", attribute.String("generator", "snowflake"), attribute.String("slot", "w/0"))

	m.Remove(seg)
	if _, ok := value(r.collect(), "cosid.idgen.ids", segment...); ok {
		t.Error("a removed generator is still reported")
	}
}

// TestStoresApart: two stores whose Metrics were given no attributes
// report apart, each with its own store attribute.
func TestStoresApart(t *testing.T) {
	r := newReader(t)
	ctx := context.Background()
	for range 2 {
		m := newMetrics(t, r)
		st := observed(t, m)
		if _, err := st.Ranges().Next(ctx, "k", 1); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]int64{}
	for _, sm := range r.collect().ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name != "cosid.store.operations" {
				continue
			}
			for _, p := range mt.Data.(metricdata.Sum[int64]).DataPoints {
				s, ok := p.Attributes.Value("store")
				if !ok {
					t.Errorf("a data point without a store attribute: %v", p.Attributes)
				}
				seen[s.String()] += p.Value
			}
		}
	}
	if len(seen) != 2 {
		t.Errorf("operations by store: %v, want two stores with one call each", seen)
	}
	for s, n := range seen {
		if n != 1 {
			t.Errorf("store %s: %d calls, want 1", s, n)
		}
	}
}

// TestScopeVersion: the metrics' instrumentation scope names this module
// and carries its version.
func TestScopeVersion(t *testing.T) {
	r := newReader(t)
	m := newMetrics(t, r, attribute.String("store", "orders"))
	st := observed(t, m)
	if _, err := st.Ranges().Next(context.Background(), "k", 1); err != nil {
		t.Fatal(err)
	}
	rm := r.collect()
	if len(rm.ScopeMetrics) != 1 {
		t.Fatalf("%d scopes, want 1", len(rm.ScopeMetrics))
	}
	scope := rm.ScopeMetrics[0].Scope
	if scope.Name != otelstore.ScopeName || scope.Version == "" || scope.Version != otelstore.Version() {
		t.Errorf("scope %q version %q, want %q version %q", scope.Name, scope.Version, otelstore.ScopeName, otelstore.Version())
	}
}
