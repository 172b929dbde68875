package otelstore_test

import (
	"testing"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/drivers/memory"
	"github.com/cosid-go/store/internal/testing/rangebench"
	"github.com/cosid-go/store/otelstore"
)

// BenchmarkNext measures what the OpenTelemetry metrics cost memory's Next
// (a counter and a histogram per call): compare otel against none in the
// same run.
func BenchmarkNext(b *testing.B) {
	run := func(b *testing.B, opts ...store.Option) {
		st, err := memory.OpenStore(nil, opts...)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		rangebench.Serial(b, st)
	}
	b.Run("none", func(b *testing.B) { run(b) })
	b.Run("otel", func(b *testing.B) {
		r := newReader(b)
		m, err := otelstore.NewMetrics(r.mp)
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		run(b, store.WithObserver(m.Observer()))
	})
}
