package store_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store"
	_ "github.com/cosid-go/store/drivers/memory"
	_ "github.com/cosid-go/store/drivers/sqlite"
)

// purgeStores opens stores of one storage of driver drv ("sqlite" or
// "memory"), closed when the test ends.
func purgeStores(t *testing.T, drv string) func() *store.Store {
	opts := map[string]string{"name": memoryName(t)}
	if drv == "sqlite" {
		opts = map[string]string{"path": filepath.Join(t.TempDir(), "ids.db")}
	}
	return func() *store.Store {
		st, err := store.Open(drv, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
}

// TestPurgeLiveLease: a purge while a lease is live deletes nothing and
// gives ErrLocked naming the slot. Before, it deleted the slot: the holder
// kept issuing below its ceiling until its next renew while the next
// acquirer of the slot started at floor 0, both stamping the same worker ID
// on the same milliseconds. The lease renews after the refusal, the next
// acquirer gets another slot, and once the lease is released the purge goes
// through.
func TestPurgeLiveLease(t *testing.T) {
	for _, drv := range []string{"sqlite", "memory"} {
		t.Run(drv, func(t *testing.T) {
			ctx := t.Context()
			open := purgeStores(t, drv)
			ns := store.Namespace{Name: "workers", Limit: 4, Tolerance: time.Second}
			holder := open()
			a, err := holder.Slots().Acquire(ctx, ns, "host-a", store.AcquireOptions{TTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			deleted, err := open().Purge(ctx)
			if !errors.Is(err, store.ErrLocked) || len(deleted) != 0 {
				t.Fatalf("Purge with a live lease: deleted %q, %v; want nothing deleted, ErrLocked", deleted, err)
			}
			if slot := fmt.Sprintf("workers/%d", a.Slot); !strings.Contains(err.Error(), slot) {
				t.Errorf("the refusal %q does not name the slot %s", err, slot)
			}
			renewed, err := holder.Slots().Renew(ctx, a)
			if err != nil {
				t.Fatalf("Renew after the refused purge: %v", err)
			}
			other := open()
			b, err := other.Slots().Acquire(ctx, ns, "host-b", store.AcquireOptions{TTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if b.Slot == a.Slot && b.Floor < renewed.Ceiling {
				t.Fatalf("two live leases of slot %d: host-a may issue [%d, %d), host-b [%d, %d)",
					a.Slot, a.Floor, renewed.Ceiling, b.Floor, b.Ceiling)
			}
			for _, l := range []struct {
				st *store.Store
				l  store.Lease
			}{{holder, renewed}, {other, b}} {
				// With the last used timestamp: a next floor ahead of the
				// clock would stop the purge too (driver.Purger).
				if err := l.st.Slots().ReleaseUsed(ctx, l.l, l.l.Floor); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := open().Purge(ctx); err != nil {
				t.Fatalf("Purge once every lease is released: %v", err)
			}
		})
	}
}
