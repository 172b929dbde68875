package zookeeper

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// purgeOnceFree purges s once the ceiling of l, a term never released, has
// passed on the server's clock: until then every purge must be refused
// with ErrLocked.
func purgeOnceFree(t *testing.T, s *driverStore, l driver.Lease) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := s.Purge(t.Context())
		if err == nil {
			return
		}
		if !errors.Is(err, driver.ErrLocked) {
			t.Fatalf("Purge before the ceiling %d: %v, want ErrLocked", l.Ceiling, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("Purge still refused 20s after a term of ceiling %d: %v", l.Ceiling, err)
		}
		time.Sleep(20 * time.Millisecond) // polling the server's clock
	}
}

// TestPurgeLiveLease: a purge while a lease is live deletes nothing and
// gives ErrLocked naming the slot; the lease renews after it. A slot
// acquired between the purge's read of it and its delete stops the purge
// (the delete is on the version read) and its term lives on. And the race:
// one store takes leases in a loop while another purges; no purge deletes
// a term that was live.
func TestPurgeLiveLease(t *testing.T) {
	zktest.EachVersion(t, func(t *testing.T, srv *zktest.Server) {
		addr := srv.Addr()
		r := &slotRounds{}
		op := openRounds(t, addr, r)
		a := openTest(t, testOptions(addr, map[string]string{"root": op.root}), nil)
		conn := rawConn(t, addr)
		ctx := t.Context()
		ns := driver.Namespace{Name: "workers", Limit: 2, Tolerance: time.Second}
		l := mustAcquire(t, a, slotRequest(ns, "a", "run"))
		deleted, err := op.Purge(ctx)
		if !errors.Is(err, driver.ErrLocked) || len(deleted) != 0 || !strings.Contains(err.Error(), "workers/0") {
			t.Fatalf("Purge with a live lease: deleted %q, %v; want nothing deleted, ErrLocked naming workers/0", deleted, err)
		}
		if names, _, err := conn.Children(op.root); err != nil || len(names) == 0 {
			t.Fatalf("after the refused purge the root has children %v (err %v), want them kept", names, err)
		}
		if l, err = a.Renew(ctx, l); err != nil {
			t.Fatalf("Renew after the refused purge: %v", err)
		}
		if err := a.Release(ctx, l, l.Floor); err != nil {
			t.Fatal(err)
		}

		// Another store acquires the released slot after the purge read
		// it, as the purge's first delete goes out.
		const opDelete = 2
		var armed atomic.Bool
		armed.Store(true)
		var late driver.Lease
		r.setCut(func(op int32) (bool, bool) {
			if op == opDelete && armed.CompareAndSwap(true, false) {
				late, err = a.Acquire(ctx, slotRequest(ns, "b", "run"))
				if err != nil {
					t.Errorf("Acquire during the purge: %v", err)
				}
			}
			return false, false
		})
		_, perr := op.Purge(ctx)
		r.setCut(nil)
		if armed.Load() {
			t.Fatal("the purge sent no delete")
		}
		if perr == nil {
			t.Fatalf("Purge went through although slot %d was acquired under it (fence %d)", late.Slot, late.Fence)
		}
		t.Logf("purge with a slot acquired under it: %v", perr)
		if _, err := a.Renew(ctx, late); err != nil {
			t.Fatalf("Renew of the term acquired under the purge: %v", err)
		}
		if err := a.Release(ctx, late, late.Floor); err != nil {
			t.Fatal(err)
		}
		if _, err := op.Purge(ctx); err != nil {
			t.Fatalf("Purge once every lease is released: %v", err)
		}
		// The race of a purge with a live lease: the TCK's Purge/LiveLeaseRace.
	})
}
