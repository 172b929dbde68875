package etcd

import (
	"testing"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/lockscale"
)

// heardCount counts the deletes of other stores' keys that the watches
// of the stores' sessions told.
func heardCount() *lockscale.Heard[*driverStore] {
	return &lockscale.Heard[*driverStore]{Of: func(d *driverStore) int64 { return d.heard.Load() }}
}

// TestLockDeleteFanOut: stores holding names of their own, with churn:
// an Unlock tells no other store (no watch of theirs covers the name).
// A watch of the whole lock prefix per session told every session of
// every delete: stores-1 messages per Unlock.
func TestLockDeleteFanOut(t *testing.T) {
	prefix := freshPrefix("fanout")
	heard := heardCount()
	lockscale.Quiet(t, heard.Open(func() *store.Store {
		return openDriver(t, prefix, func(*driverStore) {})
	}), heard.Sum, "deletes told to other stores")
}
