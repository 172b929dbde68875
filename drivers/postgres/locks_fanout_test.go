package postgres

import (
	"testing"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/lockscale"
	"github.com/cosid-go/store/internal/testing/pgtest"
)

// heardCount counts the notifications that woke none of the hearing
// store's waiters.
func heardCount() *lockscale.Heard[*driverStore] {
	return &lockscale.Heard[*driverStore]{Of: func(d *driverStore) int64 { return d.locks.heard.Load() }}
}

// TestLockDeleteFanOut: stores holding names of their own, with churn:
// an Unlock notifies no other store. With one NOTIFY channel per schema,
// every lock session heard every Unlock: stores-1 messages per Unlock.
func TestLockDeleteFanOut(t *testing.T) {
	srv := pgtest.Shared(t)
	schema := freshSchema("fanout")
	heard := heardCount()
	lockscale.Quiet(t, heard.Open(func() *store.Store { return openLockScale(t, srv, schema) }), heard.Sum,
		"notifications that woke none of the hearing store's waiters")
}
