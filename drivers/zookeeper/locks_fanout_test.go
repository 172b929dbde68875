package zookeeper

import (
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/lockscale"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestLockDeleteFanOut: stores holding names of their own, with churn:
// an Unlock fires no watch (a waiter watches its predecessor only).
func TestLockDeleteFanOut(t *testing.T) {
	addr := zktest.StartServer(t, zktest.Versions()[0]).Addr()
	root := randomRoot()
	var mu sync.Mutex
	var drivers []*driverStore
	r := lockscale.Run(t, func() *store.Store {
		d := openTest(t, testOptions(addr, map[string]string{"root": root}), nil)
		mu.Lock()
		drivers = append(drivers, d)
		mu.Unlock()
		return portable(t, d)
	}, 8, 2, time.Second, func() int64 {
		mu.Lock()
		defer mu.Unlock()
		var n int64
		for _, d := range drivers {
			n += d.sess.fired.Load()
		}
		return n
	})
	t.Log(r)
	if r.Cycles == 0 {
		t.Fatal("no Unlock+Lock in the churn")
	}
	if r.Heard != 0 {
		t.Errorf("%d stores holding names of their own: %d watches fired in %d Unlocks, want none", r.Stores, r.Heard, r.Cycles)
	}
}
