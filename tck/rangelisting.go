package tck

import (
	"slices"

	"github.com/google/go-cmp/cmp"

	"github.com/cosid-go/store/driver"
)

// checkCurrentCreatesNothing: Current of a missing key reserves and creates
// nothing: Keys does not list it, and Init at any value still works.
func checkCurrentCreatesNothing(e *env) {
	st, other := e.open(), e.open()
	e.wantCurrent(st, "peek", 0, false)
	e.wantCurrent(other, "peek", 0, false)
	keys, err := other.Ranges().Keys(e.ctx)
	e.fatalIf(err, "Keys")
	e.wantEmpty("Keys after Current of a missing key", keys)
	e.fatalIf(other.Ranges().Init(e.ctx, "peek", 42), "Init(42) of a key only Current has read: it does not exist")
	e.wantCurrent(st, "peek", 42, false)
	e.wantRange(e.next(st, "peek", 1), 42, 43, `Next("peek", 1) after Init(42)`)
}

// checkKeysSealed: Keys lists sealed keys, including one sealed while
// missing (tools plan migrations from this list).
func checkKeysSealed(e *env) {
	st := e.open()
	e.next(st, "s/used", 5)
	_, err := st.Ranges().Seal(e.ctx, "s/used")
	e.fatalIf(err, "Seal of a used key")
	_, err = st.Ranges().Seal(e.ctx, "s/missing")
	e.fatalIf(err, "Seal of a missing key")
	e.next(st, "s/open", 1)
	want := []string{"s/missing", "s/open", "s/used"}
	for _, s := range []int{0, 1} {
		keys, err := e.open().Ranges().Keys(e.ctx)
		e.fatalIf(err, "Keys")
		if !slices.IsSorted(keys) {
			e.t.Errorf("Keys = %q is not sorted", keys)
		}
		if diff := cmp.Diff(want, keys); diff != "" {
			e.t.Errorf("Keys from store %d, with two keys sealed: -want +got:\n%s", s, diff)
		}
	}
	// The driver's own Keys too: the store lists a driver.RangeLister's
	// keys by pages, but (*store.Store).Raw hands the driver to callers,
	// and its Keys is bound by the same sentence.
	var keys []string
	err = st.Raw(func(d driver.Store) error {
		var err error
		keys, err = d.(driver.RangeStore).Keys(e.ctx)
		return err
	})
	e.fatalIf(err, "the driver's own Keys")
	if diff := cmp.Diff(want, keys); diff != "" {
		e.t.Errorf("the driver's own Keys (driver.RangeStore.Keys), with two keys sealed: -want +got:\n%s", diff)
	}
}
