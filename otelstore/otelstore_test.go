package otelstore_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/drivers/memory"
	"github.com/cosid-go/store/idgen"
	"github.com/cosid-go/store/otelstore"
)

// reader is an SDK meter provider with its in-memory reader.
type reader struct {
	t  testing.TB
	rd *sdkmetric.ManualReader
	mp *sdkmetric.MeterProvider
}

func newReader(t testing.TB) *reader {
	rd := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	return &reader{t: t, rd: rd, mp: mp}
}

func (r *reader) collect() metricdata.ResourceMetrics {
	r.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.rd.Collect(context.Background(), &rm); err != nil {
		r.t.Fatalf("collect: %v", err)
	}
	return rm
}

// value returns the value of metric name at the data point with the given
// attributes (among others), a histogram's count; ok is false when there is
// no such point.
func value(rm metricdata.ResourceMetrics, name string, attrs ...attribute.KeyValue) (v float64, ok bool) {
	match := func(set attribute.Set) bool {
		for _, kv := range attrs {
			if got, ok := set.Value(kv.Key); !ok || got != kv.Value {
				return false
			}
		}
		return true
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				v, ok = point(d.DataPoints, match)
			case metricdata.Sum[float64]:
				v, ok = point(d.DataPoints, match)
			case metricdata.Gauge[int64]:
				v, ok = point(d.DataPoints, match)
			case metricdata.Gauge[float64]:
				v, ok = point(d.DataPoints, match)
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						v, ok = float64(p.Count), true
						break
					}
				}
			}
			if ok {
				return v, true
			}
		}
	}
	return 0, false
}

// point returns the value of the first of points whose attributes match.
func point[N int64 | float64](points []metricdata.DataPoint[N], match func(attribute.Set) bool) (float64, bool) {
	for _, p := range points {
		if match(p.Attributes) {
			return float64(p.Value), true
		}
	}
	return 0, false
}

// want checks the value of a metric's data point.
func want(t *testing.T, rm metricdata.ResourceMetrics, wantV float64, name string, attrs ...attribute.KeyValue) {
	t.Helper()
	v, ok := value(rm, name, attrs...)
	if !ok {
		t.Errorf("%s%v: no data point", name, attrs)
		return
	}
	if v != wantV {
		t.Errorf("%s%v = %v, want %v", name, attrs, v, wantV)
	}
}

func op(name, outcome string) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("operation", name), attribute.String("outcome", outcome)}
}

func newMetrics(t *testing.T, r *reader, attrs ...attribute.KeyValue) *otelstore.Metrics {
	t.Helper()
	m, err := otelstore.NewMetrics(r.mp, attrs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// observed opens a memory store that m observes, closed when the test
// ends.
func observed(t *testing.T, m *otelstore.Metrics) *store.Store {
	t.Helper()
	st, err := memory.OpenStore(nil, store.WithObserver(m.Observer()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestOperationsLocksAndLeases(t *testing.T) {
	r := newReader(t)
	m := newMetrics(t, r, attribute.String("store", "orders"))
	st := observed(t, m)
	ctx := context.Background()
	for range 2 {
		if _, err := st.Ranges().Next(ctx, "k", 10); err != nil {
			t.Fatal(err)
		}
	}
	st.Ranges().Seal(ctx, "k")
	st.Ranges().Next(ctx, "k", 10) // sealed
	a, err := st.Locks().Lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Locks().Lock(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	rm := r.collect()
	store := attribute.String("store", "orders")
	want(t, rm, 2, "cosid.store.operations", append(op("Next", "ok"), store)...)
	want(t, rm, 1, "cosid.store.operations", append(op("Next", "sealed"), store)...)
	want(t, rm, 2, "cosid.store.operation.duration", op("Next", "ok")...)
	want(t, rm, 2, "cosid.store.locks.held")
	if _, ok := value(rm, "cosid.store.connected"); ok {
		t.Error("a memory store reports a connection state")
	}
	a.Unlock(ctx)
	st.Close() // b ends with the store: not counted as lost
	rm = r.collect()
	want(t, rm, 0, "cosid.store.locks.held")
	if v, ok := value(rm, "cosid.store.locks.lost"); ok {
		t.Errorf("locks lost = %v, want none: Close ended the hold", v)
	}
}

func TestGeneratorEvents(t *testing.T) {
	r := newReader(t)
	m := newMetrics(t, r)
	st := observed(t, m)
	st.Report(store.Event{Kind: store.LeaseAcquired, Key: "w/3", Deadline: time.Now().Add(time.Hour)})
	st.Report(store.Event{Kind: store.FloorWait, Key: "w/3", Wait: 250 * time.Millisecond})
	st.Report(store.Event{Kind: store.PrefetchGrown, Key: "orders", Count: 400})
	rm := r.collect()
	left, ok := value(rm, "cosid.idgen.lease.remaining", attribute.String("slot", "w/3"))
	if !ok || left < 3500 || left > 3600 {
		t.Errorf("lease remaining = %v (%v), want just under an hour", left, ok)
	}
	want(t, rm, 0.25, "cosid.idgen.floor_wait")
	want(t, rm, 400, "cosid.idgen.prefetch.size", attribute.String("key", "orders"))
	st.Report(store.Event{Kind: store.LeaseLost, Key: "w/3", Err: store.ErrLeaseLost})
	rm = r.collect()
	if _, ok := value(rm, "cosid.idgen.lease.remaining", attribute.String("slot", "w/3")); ok {
		t.Error("a lost lease still has a time remaining")
	}
	want(t, rm, 1, "cosid.store.leases.lost")
}

// TestCoreModuleDoesNotImportOpenTelemetry: OpenTelemetry stays in this
// module; nothing of the core module depends on it.
func TestCoreModuleDoesNotImportOpenTelemetry(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./...")
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "github.com/cosid-go/store/drivers/zookeeper") {
		t.Fatalf("go list did not list the core module:\n%s", out)
	}
	if strings.Contains(string(out), "opentelemetry") {
		t.Errorf("the core module depends on OpenTelemetry:\n%s", out)
	}
}

// TestSnowflakeLeaseRemaining: a generator's session reports its lease, and
// the gauge shows the time it has left.
func TestSnowflakeLeaseRemaining(t *testing.T) {
	r := newReader(t)
	m := newMetrics(t, r)
	st := observed(t, m)
	ctx := context.Background()
	ns := store.Namespace{Name: "w", Limit: 4}
	g, err := idgen.NewSnowflake(ctx, st, ns, "host", idgen.SnowflakeOptions{Acquire: store.AcquireOptions{TTL: time.Minute, Preferred: new(0)}})
	if err != nil {
		t.Fatal(err)
	}
	left, ok := value(r.collect(), "cosid.idgen.lease.remaining", attribute.String("slot", "w/0"))
	if !ok || left <= 30 || left > 60 {
		t.Errorf("lease remaining = %v (%v), want most of a minute", left, ok)
	}
	if err := g.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := value(r.collect(), "cosid.idgen.lease.remaining", attribute.String("slot", "w/0")); ok {
		t.Error("a released lease still has a time remaining")
	}
}
