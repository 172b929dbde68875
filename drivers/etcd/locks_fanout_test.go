package etcd

import (
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/lockscale"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// TestLockDeleteFanOut: stores holding names of their own, with churn:
// an Unlock tells no other store (no watch of theirs covers the name).
// A watch of the whole lock prefix per session told every session of
// every delete: stores-1 messages per Unlock.
func TestLockDeleteFanOut(t *testing.T) {
	prefix := freshPrefix("fanout")
	var mu sync.Mutex
	var drivers []*driverStore
	r := lockscale.Run(t, func() *store.Store {
		st := openDriver(t, prefix, func(*driverStore) {})
		mu.Lock()
		drivers = append(drivers, rawdriver.Of(st).(*driverStore))
		mu.Unlock()
		return st
	}, 8, 2, time.Second, func() int64 {
		mu.Lock()
		defer mu.Unlock()
		var n int64
		for _, d := range drivers {
			n += d.heard.Load()
		}
		return n
	})
	t.Log(r)
	if r.Cycles == 0 {
		t.Fatal("no Unlock+Lock in the churn")
	}
	if r.Heard != 0 {
		t.Errorf("%d stores holding names of their own: %d deletes told to other stores in %d Unlocks, want none", r.Stores, r.Heard, r.Cycles)
	}
}
