// Package rawdriver hands tests the driver under a store, for the tests
// that work below the portable layer: wrappers that put faults between a
// store and its driver, white-box tests of a driver's own type. It keeps the
// driver past (*store.Store).Raw, which Raw's contract forbids an
// application; a test uses it only while the store is open. It also opens
// a driver's stores for its tests (Open, OpenStore).
package rawdriver

import (
	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// Of returns st's driver, or nil once st is closed.
func Of(st *store.Store) driver.Store {
	var d driver.Store
	_ = st.Raw(func(x driver.Store) error { d = x; return nil })
	return d
}
