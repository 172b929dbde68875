package etcd

import (
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/lockscale"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// heardCount keeps the stores a test opens, to count the deletes of
// other stores' keys their sessions' watches told.
type heardCount struct {
	mu      sync.Mutex
	drivers []*driverStore
}

func (c *heardCount) add(st *store.Store) *store.Store {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drivers = append(c.drivers, rawdriver.Of(st).(*driverStore))
	return st
}

func (c *heardCount) heard() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, d := range c.drivers {
		n += d.heard.Load()
	}
	return n
}

// TestLockDeleteFanOut: stores holding names of their own, with churn:
// an Unlock tells no other store (no watch of theirs covers the name).
// A watch of the whole lock prefix per session told every session of
// every delete: stores-1 messages per Unlock.
func TestLockDeleteFanOut(t *testing.T) {
	prefix := freshPrefix("fanout")
	var opened heardCount
	r := lockscale.Run(t, func() *store.Store {
		return opened.add(openDriver(t, prefix, func(*driverStore) {}))
	}, 8, 2, time.Second, opened.heard)
	t.Log(r)
	if r.Cycles == 0 {
		t.Fatal("no Unlock+Lock in the churn")
	}
	if r.Heard != 0 {
		t.Errorf("%d stores holding names of their own: %d deletes told to other stores in %d Unlocks, want none", r.Stores, r.Heard, r.Cycles)
	}
}
