package main

import (
	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// rawAs calls f with st's driver as D, a driver interface the portable API
// does not wrap (a backup mark, ZooKeeper's ACLs). has is false, and f not
// called, when the driver lacks D.
func rawAs[D any](st *store.Store, f func(D) error) (has bool, err error) {
	err = st.Raw(func(d driver.Store) error {
		x, ok := d.(D)
		if !ok {
			return nil
		}
		has = true
		return f(x)
	})
	return has, err
}

// hasCap reports whether st's driver implements the driver interface D.
func hasCap[D any](st *store.Store) bool {
	has, _ := rawAs(st, func(D) error { return nil })
	return has
}
