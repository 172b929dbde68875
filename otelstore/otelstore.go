// Package otelstore turns what a store reports (store.Observer) into
// OpenTelemetry metrics (Metrics) and traces (Tracer), through the
// OpenTelemetry APIs: the application chooses the SDK and the exporter
// (Prometheus, OTLP, ...).
// The core packages do not import OpenTelemetry; only programs that import
// this package compile it.
//
//	m, err := otelstore.NewMetrics(otel.GetMeterProvider(), attribute.String("store", "orders"))
//	defer m.Close()
//	t := otelstore.NewTracer(otel.GetTracerProvider())
//	st, err := store.Open("zookeeper", options,
//		store.WithObserver(m.Observer()), store.WithObserver(t.Observer()))
//
// # Traces
//
// A span per call of the portable API, "cosid.store " and the operation,
// with the attributes cosid.store.key, cosid.store.outcome and
// cosid.store.retries (see Tracer).
//
// # Metrics
//
//   - cosid.store.operations ({operation}): calls of the portable API, by
//     operation and outcome ("ok", "unavailable", "sealed", ...: store.Outcome).
//   - cosid.store.operation.duration (s): their latency, by operation and
//     outcome.
//   - cosid.store.connected: 1 while the driver reports a session, 0 after a
//     disconnect or an expiry (reported once the driver reported a state).
//   - cosid.store.connection.changes: connection state changes, by state.
//   - cosid.store.retries: operations tried again after a connection loss.
//   - cosid.store.skipped_values: values skipped after writes with an unknown
//     outcome (gaps).
//   - cosid.store.locks.held: locks held through the store.
//   - cosid.store.locks.lost, cosid.store.leases.lost: holds lost (not
//     those ended by closing the store).
//   - cosid.idgen.lease.remaining (s): for each slot a generator holds
//     ("ns/3"), the time until it must stop issuing.
//   - cosid.idgen.floor_wait (s): time generators waited for their clock to
//     reach a lease's floor.
//   - cosid.idgen.prefetch.size: the values a segment generator fetches at a
//     time, by key.
//   - cosid.idgen.ids ({id}): IDs issued by each generator given to Add, by
//     generator ("segment", "snowflake") and key or slot.
//   - cosid.idgen.segment.refills, cosid.idgen.segment.waits: a Segment's
//     store calls that reserved values, and its NextID calls that found
//     nothing left and waited for one (idgen.SegmentStats), by key.
//
// Every measurement also carries the attributes given to NewMetrics and a
// "store" attribute (NewMetrics', or a number it gives), so that two stores
// sharing a meter provider stay apart. The instrumentation scope carries
// the module's version (Version).
package otelstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/idgen"
)

// ScopeName is the instrumentation scope of the meter the metrics use.
const ScopeName = "github.com/cosid-go/store/otelstore"

// Metrics records a store's events as metrics. Make one with NewMetrics, give
// Observer to store.WithObserver, and Close it after the store.
type Metrics struct {
	attrs []attribute.KeyValue

	ops           metric.Int64Counter
	duration      metric.Float64Histogram
	connChanges   metric.Int64Counter
	retries       metric.Int64Counter
	skipped       metric.Int64Counter
	locksHeld     metric.Int64UpDownCounter
	locksLost     metric.Int64Counter
	leasesLost    metric.Int64Counter
	floorWait     metric.Float64Counter
	prefetch      metric.Int64Gauge
	connected     metric.Int64ObservableGauge
	leaseLeft     metric.Float64ObservableGauge
	ids           metric.Int64ObservableCounter
	refills       metric.Int64ObservableCounter
	waits         metric.Int64ObservableCounter
	registration  metric.Registration
	opSets        sync.Map // opKey -> metric.MeasurementOption
	mu            sync.Mutex
	connState     int64 // -1 until the driver reports a state
	leaseDeadline map[string]time.Time
	gens          []idgen.Generator // Add's
}

// NewMetrics creates the instruments on a meter of mp (scope ScopeName, version
// Version()). attrs are added to every measurement; without a "store"
// attribute among them, one is added: the number of this Metrics in the
// process ("1", "2", ...), so that two stores never merge. Name the store
// with attribute.String("store", name) for series that keep their name
// across restarts.
func NewMetrics(mp metric.MeterProvider, attrs ...attribute.KeyValue) (*Metrics, error) {
	m := &Metrics{attrs: withStore(attrs), connState: -1, leaseDeadline: map[string]time.Time{}}
	meter := mp.Meter(ScopeName, metric.WithInstrumentationVersion(Version()))
	b := builder{meter: meter}
	m.ops = b.counter("cosid.store.operations", "{operation}", "Calls of the store API, by operation and outcome.")
	m.duration = b.histogram("cosid.store.operation.duration", "Latency of the calls of the store API, by operation and outcome.")
	m.connChanges = b.counter("cosid.store.connection.changes", "{change}", "Connection state changes, by state.")
	m.retries = b.counter("cosid.store.retries", "{retry}", "Operations tried again after a connection loss.")
	m.skipped = b.counter("cosid.store.skipped_values", "{value}", "Values skipped after writes with an unknown outcome.")
	m.locksLost = b.counter("cosid.store.locks.lost", "{lock}", "Locks lost while held.")
	m.leasesLost = b.counter("cosid.store.leases.lost", "{lease}", "Slot leases lost.")
	if b.err == nil {
		m.locksHeld, b.err = meter.Int64UpDownCounter("cosid.store.locks.held",
			metric.WithUnit("{lock}"), metric.WithDescription("Locks held through the store."))
	}
	if b.err == nil {
		m.floorWait, b.err = meter.Float64Counter("cosid.idgen.floor_wait",
			metric.WithUnit("s"), metric.WithDescription("Time generators waited for their clock to reach a lease's floor."))
	}
	if b.err == nil {
		m.prefetch, b.err = meter.Int64Gauge("cosid.idgen.prefetch.size",
			metric.WithUnit("{value}"), metric.WithDescription("Values a segment generator fetches at a time, by key."))
	}
	if b.err == nil {
		m.connected, b.err = meter.Int64ObservableGauge("cosid.store.connected",
			metric.WithDescription("1 while the driver reports a session, else 0."))
	}
	if b.err == nil {
		m.leaseLeft, b.err = meter.Float64ObservableGauge("cosid.idgen.lease.remaining",
			metric.WithUnit("s"), metric.WithDescription("Time until a generator must stop issuing under its slot lease, by slot."))
	}
	if b.err == nil {
		m.ids, b.err = meter.Int64ObservableCounter("cosid.idgen.ids",
			metric.WithUnit("{id}"), metric.WithDescription("IDs a generator issued, by generator and key or slot."))
	}
	if b.err == nil {
		m.refills, b.err = meter.Int64ObservableCounter("cosid.idgen.segment.refills",
			metric.WithUnit("{call}"), metric.WithDescription("Store calls that reserved values for a segment generator, by key."))
	}
	if b.err == nil {
		m.waits, b.err = meter.Int64ObservableCounter("cosid.idgen.segment.waits",
			metric.WithUnit("{call}"), metric.WithDescription("NextID calls of a segment generator that found no value left and waited for a refill, by key."))
	}
	if b.err == nil {
		m.registration, b.err = meter.RegisterCallback(m.observe, m.connected, m.leaseLeft, m.ids, m.refills, m.waits)
	}
	if b.err != nil {
		return nil, b.err
	}
	return m, nil
}

// builder creates instruments until the first error.
type builder struct {
	meter metric.Meter
	err   error
}

func (b *builder) counter(name, unit, desc string) metric.Int64Counter {
	if b.err != nil {
		return nil
	}
	c, err := b.meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	b.err = err
	return c
}

func (b *builder) histogram(name, desc string) metric.Float64Histogram {
	if b.err != nil {
		return nil
	}
	h, err := b.meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
		// From 100µs (a memory store) to 10s (an operation out of time).
		metric.WithExplicitBucketBoundaries(0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
			0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	b.err = err
	return h
}

// Close unregisters the callbacks of the observable gauges.
func (m *Metrics) Close() error { return m.registration.Unregister() }

// Observer returns the store.Observer that records into m.
func (m *Metrics) Observer() store.Observer {
	return store.Observer{End: m.op, Event: m.event}
}

func (m *Metrics) with(kv ...attribute.KeyValue) metric.MeasurementOption {
	return metric.WithAttributes(append(kv, m.attrs...)...)
}

func (m *Metrics) op(ctx context.Context, e store.OpEnd) {
	o := m.opAttrs(e.Op, e.Outcome)
	m.ops.Add(ctx, 1, o)
	m.duration.Record(ctx, e.Duration.Seconds(), o)
}

// opAttrs returns the attributes of an operation and outcome. Both come
// from short fixed lists, so the cache stays small, and a call of the store
// does not build an attribute set each time.
func (m *Metrics) opAttrs(op, outcome string) metric.MeasurementOption {
	k := opKey{op, outcome}
	if o, ok := m.opSets.Load(k); ok {
		return o.(metric.MeasurementOption)
	}
	o := metric.WithAttributeSet(attribute.NewSet(append([]attribute.KeyValue{
		attribute.String("operation", op), attribute.String("outcome", outcome)}, m.attrs...)...))
	m.opSets.Store(k, o)
	return o
}

type opKey struct{ op, outcome string }

func (m *Metrics) event(e store.Event) {
	ctx := context.Background()
	switch e.Kind {
	case store.Connected, store.Disconnected, store.Expired:
		m.mu.Lock()
		m.connState = 0
		if e.Kind == store.Connected {
			m.connState = 1
		}
		m.mu.Unlock()
		m.connChanges.Add(ctx, 1, m.with(attribute.String("state", string(e.Kind))))
	case store.Retry:
		m.retries.Add(ctx, 1, m.with())
	case store.UnknownOutcome:
		m.skipped.Add(ctx, e.Count, m.with())
	case store.LockAcquired:
		m.locksHeld.Add(ctx, 1, m.with())
	case store.LockReleased:
		m.locksHeld.Add(ctx, -1, m.with())
	case store.LockLost:
		m.locksHeld.Add(ctx, -1, m.with())
		if !errors.Is(e.Err, store.ErrClosed) { // a hold ended by Close is not lost
			m.locksLost.Add(ctx, 1, m.with())
		}
	case store.LeaseAcquired, store.LeaseRenewed:
		m.mu.Lock()
		m.leaseDeadline[e.Key] = e.Deadline
		m.mu.Unlock()
	case store.LeaseLost, store.LeaseReleased:
		m.mu.Lock()
		delete(m.leaseDeadline, e.Key)
		m.mu.Unlock()
		if e.Kind == store.LeaseLost {
			m.leasesLost.Add(ctx, 1, m.with())
		}
	case store.FloorWait:
		m.floorWait.Add(ctx, e.Wait.Seconds(), m.with())
	case store.PrefetchGrown:
		m.prefetch.Record(ctx, e.Count, m.with(attribute.String("key", e.Key)))
	}
}

// observe reports the gauges that are read at collection time.
func (m *Metrics) observe(_ context.Context, o metric.Observer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.connState >= 0 {
		o.ObserveInt64(m.connected, m.connState, m.with())
	}
	now := time.Now()
	for slot, deadline := range m.leaseDeadline {
		o.ObserveFloat64(m.leaseLeft, max(deadline.Sub(now).Seconds(), 0), m.with(attribute.String("slot", slot)))
	}
	m.observeGenerators(o)
	return nil
}
