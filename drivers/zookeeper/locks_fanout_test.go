package zookeeper

import (
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/lockscale"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// firedCount keeps the driver stores a test opens, to count the watches
// their sessions fired.
type firedCount struct {
	mu      sync.Mutex
	drivers []*driverStore
}

func (c *firedCount) add(d *driverStore) *driverStore {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drivers = append(c.drivers, d)
	return d
}

func (c *firedCount) fired() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, d := range c.drivers {
		n += d.sess.fired.Load()
	}
	return n
}

// TestLockDeleteFanOut: stores holding names of their own, with churn:
// an Unlock fires no watch (a waiter watches its predecessor only).
func TestLockDeleteFanOut(t *testing.T) {
	addr := zktest.StartServer(t, zktest.Versions()[0]).Addr()
	root := randomRoot()
	var opened firedCount
	r := lockscale.Run(t, func() *store.Store {
		return portable(t, opened.add(openTest(t, testOptions(addr, map[string]string{"root": root}), nil)))
	}, 8, 2, time.Second, opened.fired)
	t.Log(r)
	if r.Cycles == 0 {
		t.Fatal("no Unlock+Lock in the churn")
	}
	if r.Heard != 0 {
		t.Errorf("%d stores holding names of their own: %d watches fired in %d Unlocks, want none", r.Stores, r.Heard, r.Cycles)
	}
}
