package postgres

import (
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/lockscale"
	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// TestLockDeleteFanOut: stores holding names of their own, with churn:
// an Unlock notifies no other store. With one NOTIFY channel per schema,
// every lock session heard every Unlock: stores-1 messages per Unlock.
func TestLockDeleteFanOut(t *testing.T) {
	srv := pgtest.Shared(t)
	schema := freshSchema("fanout")
	var mu sync.Mutex
	var drivers []*driverStore
	r := lockscale.Run(t, func() *store.Store {
		st := openLockScale(t, srv, schema)
		mu.Lock()
		drivers = append(drivers, rawdriver.Of(st).(*driverStore))
		mu.Unlock()
		return st
	}, 8, 2, time.Second, func() int64 {
		mu.Lock()
		defer mu.Unlock()
		var n int64
		for _, d := range drivers {
			n += d.locks.heard.Load()
		}
		return n
	})
	t.Log(r)
	if r.Cycles == 0 {
		t.Fatal("no Unlock+Lock in the churn")
	}
	if r.Heard != 0 {
		t.Errorf("%d stores holding names of their own: %d notifications woke no waiter of the store that heard them, in %d Unlocks; want none",
			r.Stores, r.Heard, r.Cycles)
	}
}
