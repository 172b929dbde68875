package rawdriver

import (
	"maps"
	"testing"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// Open opens a driver store with factory on options with extra added
// (extra's win), as the driver's own type T for its white-box tests; it
// is closed when the test ends.
func Open[T driver.Store](tb testing.TB, factory driver.Factory, options, extra map[string]string) T {
	tb.Helper()
	d, err := factory(With(options, extra))
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { _ = d.Close() })
	s, ok := d.(T)
	if !ok {
		tb.Fatalf("Open: %T is not %T", d, s)
	}
	return s
}

// OpenStore opens a store through the user API on a driver store that
// factory opens on options; it is closed when the test ends.
func OpenStore(tb testing.TB, factory driver.Factory, options map[string]string, opts ...store.Option) *store.Store {
	tb.Helper()
	d, err := factory(options)
	if err != nil {
		tb.Fatal(err)
	}
	st, err := store.OpenDriver(d, opts...)
	if err != nil {
		_ = d.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// With returns a copy of options with extra added (extra's win).
func With(options, extra map[string]string) map[string]string {
	o := make(map[string]string, len(options)+len(extra))
	maps.Copy(o, options)
	maps.Copy(o, extra)
	return o
}
