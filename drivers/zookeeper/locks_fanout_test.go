package zookeeper

import (
	"testing"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/lockscale"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// firedCount counts the watches the stores' sessions fired.
func firedCount() *lockscale.Heard[*driverStore] {
	return &lockscale.Heard[*driverStore]{Of: func(d *driverStore) int64 { return d.sess.fired.Load() }}
}

// TestLockDeleteFanOut: stores holding names of their own, with churn:
// an Unlock fires no watch (a waiter watches its predecessor only). The
// session timeout is long: at a CI load of 80 a 4 s session went
// unconfirmed and a hold was lost, which is not what this test is about.
func TestLockDeleteFanOut(t *testing.T) {
	addr := zktest.StartServer(t, zktest.Versions()[0]).Addr()
	root := randomRoot()
	fired := firedCount()
	lockscale.Quiet(t, fired.Open(func() *store.Store {
		return portable(t, openTest(t, testOptions(addr, map[string]string{"root": root, "sessionTimeout": "20s"}), nil))
	}), fired.Sum, "watches fired")
}
