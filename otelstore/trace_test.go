package otelstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/drivers/memory"
	"github.com/cosid-go/store/internal/testing/rawdriver"
	"github.com/cosid-go/store/otelstore"
)

// newTracer is a Tracer on an SDK tracer provider whose spans go, as they
// end, to the exporter returned.
func newTracer(t testing.TB, attrs ...attribute.KeyValue) (*otelstore.Tracer, *sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return otelstore.NewTracer(tp, attrs...), tp, exp
}

// attr returns a span's attribute named k.
func attr(s tracetest.SpanStub, k attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == k {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// spanOf is the one span named name; it fails the test if there is not
// exactly one.
func spanOf(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1; spans: %v", len(found), name, names(exp))
	}
	return found[0]
}

func names(exp *tracetest.InMemoryExporter) []string {
	var out []string
	for _, s := range exp.GetSpans() {
		out = append(out, s.Name)
	}
	return out
}

// memoryRanges is the memory driver's range store, as a store hands it out
// through Driver.
type memoryRanges interface {
	driver.Store
	driver.RangeStore
}

// spanSeer is a memory store that keeps the span its Next runs under.
type spanSeer struct {
	memoryRanges
	mu    sync.Mutex
	spans []trace.SpanContext
}

func (s *spanSeer) Next(ctx context.Context, key string, step int64) (int64, error) {
	s.mu.Lock()
	s.spans = append(s.spans, trace.SpanContextFromContext(ctx))
	s.mu.Unlock()
	return s.memoryRanges.Next(ctx, key, step)
}

// TestSpans: a span per call, child of the caller's, with its key, outcome
// and retries; the driver runs under it; a failed call has the error.
func TestSpans(t *testing.T) {
	tr, tp, exp := newTracer(t, attribute.String("store", "orders"))
	mem, err := memory.OpenStore(nil)
	if err != nil {
		t.Fatal(err)
	}
	d := &spanSeer{memoryRanges: rawdriver.Of(mem).(memoryRanges)}
	st, err := store.OpenDriver(d, store.WithObserver(tr.Observer()))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
	if _, err := st.Ranges().Next(ctx, "orders", 10); err != nil {
		t.Fatal(err)
	}
	parent.End()

	next := spanOf(t, exp, "cosid.store Next")
	if next.Parent.SpanID() != parent.SpanContext().SpanID() || next.SpanContext.TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("Next's span has parent %v, want the caller's span %v", next.Parent.SpanID(), parent.SpanContext().SpanID())
	}
	if len(d.spans) != 1 || d.spans[0].SpanID() != next.SpanContext.SpanID() {
		t.Errorf("the driver ran under %v, want Next's span %v", d.spans, next.SpanContext.SpanID())
	}
	for k, want := range map[attribute.Key]attribute.Value{
		otelstore.KeyAttr:     attribute.StringValue("orders"),
		otelstore.OutcomeAttr: attribute.StringValue("ok"),
		otelstore.RetriesAttr: attribute.IntValue(0),
		"store":               attribute.StringValue("orders"),
	} {
		if got, ok := attr(next, k); !ok || got != want {
			t.Errorf("Next's span: %s = %v (%v), want %v", k, got.String(), ok, want.String())
		}
	}
	if next.Status.Code != codes.Unset || next.SpanKind != trace.SpanKindClient {
		t.Errorf("Next's span: status %v, kind %v; want unset, client", next.Status, next.SpanKind)
	}

	exp.Reset()
	if _, err := st.Ranges().Seal(context.Background(), "orders"); err != nil {
		t.Fatal(err)
	}
	_, err = st.Ranges().Next(context.Background(), "orders", 10)
	if !errors.Is(err, store.ErrSealed) {
		t.Fatalf("Next of a sealed key: %v, want ErrSealed", err)
	}
	sealed := spanOf(t, exp, "cosid.store Next")
	if got, _ := attr(sealed, otelstore.OutcomeAttr); got.AsString() != "sealed" {
		t.Errorf("sealed Next's span: outcome %q, want sealed", got.AsString())
	}
	if sealed.Status.Code != codes.Error || len(sealed.Events) != 1 || sealed.Events[0].Name != "exception" {
		t.Errorf("sealed Next's span: status %v, events %v; want Error and the error recorded", sealed.Status, sealed.Events)
	}

	exp.Reset()
	if _, err := st.Ranges().Keys(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := attr(spanOf(t, exp, "cosid.store Keys"), otelstore.KeyAttr); ok {
		t.Error("a listing's span has a key")
	}
}

// TestTracerWithOtherObservers: each Tracer ends its own span, even when
// another observer started one after it, and metrics beside it still count.
func TestTracerWithOtherObservers(t *testing.T) {
	a, _, expA := newTracer(t)
	b, _, expB := newTracer(t)
	r := newReader(t)
	m := newMetrics(t, r)
	st, err := memory.OpenStore(nil,
		store.WithObserver(a.Observer()), store.WithObserver(m.Observer()), store.WithObserver(b.Observer()))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Ranges().Next(context.Background(), "k", 1); err != nil {
		t.Fatal(err)
	}
	sa, sb := spanOf(t, expA, "cosid.store Next"), spanOf(t, expB, "cosid.store Next")
	if sb.Parent.SpanID() != sa.SpanContext.SpanID() {
		t.Errorf("the second tracer's span has parent %v, want the first's %v", sb.Parent.SpanID(), sa.SpanContext.SpanID())
	}
	want(t, r.collect(), 1, "cosid.store.operations", op("Next", "ok")...)
}
