package otelstore

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/cosid-go/store"
)

// The attributes of a call's span.
const (
	// KeyAttr is the key, namespace, slot ("ns/3") or lock name of the call
	// (absent for listings).
	KeyAttr = attribute.Key("cosid.store.key")
	// OutcomeAttr is "ok" or the kind of the error (store.Outcome).
	OutcomeAttr = attribute.Key("cosid.store.outcome")
	// RetriesAttr counts the driver's retries after connection losses.
	RetriesAttr = attribute.Key("cosid.store.retries")
)

// Tracer records each call of a store's portable API as a span, named
// "cosid.store " and the operation ("cosid.store Next"), a child of the
// span in the caller's context. The span carries the call's key, outcome
// and retries; a call that failed also has the error and the status Error.
// What the driver does runs under the span's context.
//
//	t := otelstore.NewTracer(otel.GetTracerProvider())
//	st, err := store.Open("zookeeper", options, store.WithObserver(t.Observer()))
//
// Give both a Tracer's and a Metrics' observers to a store for traces and
// metrics.
type Tracer struct {
	tracer trace.Tracer
	attrs  []attribute.KeyValue
}

// NewTracer makes a Tracer on a tracer of tp. attrs are added to every span.
func NewTracer(tp trace.TracerProvider, attrs ...attribute.KeyValue) *Tracer {
	return &Tracer{tracer: tp.Tracer(ScopeName, trace.WithInstrumentationVersion(Version())), attrs: attrs}
}

// Observer returns the store.Observer that starts and ends the spans.
func (t *Tracer) Observer() store.Observer {
	return store.Observer{Start: t.start, End: t.end}
}

// spanKey finds the span a Tracer started in the context given to Op: the
// current span there may be one that another observer started after it.
type spanKey struct{ t *Tracer }

func (t *Tracer) start(ctx context.Context, s store.OpStart) context.Context {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(t.attrs...)}
	if s.Key != "" {
		opts = append(opts, trace.WithAttributes(KeyAttr.String(s.Key)))
	}
	ctx, span := t.tracer.Start(ctx, "cosid.store "+s.Op, opts...)
	return context.WithValue(ctx, spanKey{t}, span)
}

func (t *Tracer) end(ctx context.Context, e store.OpEnd) {
	span, ok := ctx.Value(spanKey{t}).(trace.Span)
	if !ok {
		return
	}
	span.SetAttributes(OutcomeAttr.String(e.Outcome), RetriesAttr.Int(e.Retries))
	if e.Err != nil {
		span.RecordError(e.Err)
		span.SetStatus(codes.Error, e.Outcome)
	}
	span.End()
}
