package otelstore

import (
	"runtime/debug"
	"strconv"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/cosid-go/store/idgen"
)

// Add makes m report g's counters at each collection: the IDs it issued
// (cosid.idgen.ids) and, for a Segment, its refills and waits
// (cosid.idgen.segment.refills, cosid.idgen.segment.waits). Generators of
// other types are ignored. Remove it once closed.
func (m *Metrics) Add(g idgen.Generator) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gens = append(m.gens, g)
}

// Remove stops reporting g.
func (m *Metrics) Remove(g idgen.Generator) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, h := range m.gens {
		if h == g {
			m.gens = append(m.gens[:i], m.gens[i+1:]...)
			return
		}
	}
}

// observeGenerators reports the counters of the generators added; m.mu is
// held.
func (m *Metrics) observeGenerators(o metric.Observer) {
	for _, g := range m.gens {
		switch g := g.(type) {
		case *idgen.Segment:
			st := g.Stats()
			key := m.with(attribute.String("generator", "segment"), attribute.String("key", g.Key()))
			o.ObserveInt64(m.ids, st.Issued, key)
			o.ObserveInt64(m.refills, st.Fetches, key)
			o.ObserveInt64(m.waits, st.Waits, key)
		case *idgen.Snowflake:
			l := g.Session().Lease()
			o.ObserveInt64(m.ids, g.Stats().Issued, m.with(attribute.String("generator", "snowflake"),
				attribute.String("slot", l.Namespace+"/"+strconv.Itoa(l.Slot))))
		}
	}
}

// stores numbers the Metrics of the process, for the default store
// attribute.
var stores atomic.Int64

// withStore returns attrs with a "store" attribute: the caller's, or else
// the number of this Metrics in the process ("1", "2", ...), so that two
// stores sharing a meter provider never add up into one series.
func withStore(attrs []attribute.KeyValue) []attribute.KeyValue {
	n := stores.Add(1)
	for _, kv := range attrs {
		if kv.Key == "store" {
			return attrs
		}
	}
	return append(attrs[:len(attrs):len(attrs)], attribute.String("store", strconv.FormatInt(n, 10)))
}

// Version is the version of this module, the instrumentation scope's
// version of the metrics and spans: the module's version in the program's
// build information, or "devel" when it has none (a build inside this
// repository).
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if bi.Main.Path == ScopeName && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == ScopeName {
			if d.Replace != nil || d.Version == "" || d.Version == "(devel)" {
				return "devel"
			}
			return d.Version
		}
	}
	return "devel"
}
