package etcd

import (
	"errors"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
)

// TestSlotFenceWentBack: a slot key put back to an older record (a
// restored backup) under a store that saw a later fence is refused with
// ErrCorrupt by that store's Acquire and Renew, rather than handing out
// a fence (and a floor) it handed out before.
func TestSlotFenceWentBack(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("fenceback")
	s := openShifted(t, prefix, 0)
	cli := rawClient(t)
	ns := driver.Namespace{Name: "n", Limit: 1, Tolerance: time.Millisecond}
	req := driver.AcquireRequest{Namespace: ns, Owner: "o", Incarnation: "i", TTL: time.Minute}
	sk := prefix + "/slot/n/0"
	l, err := s.Acquire(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, l, -1); err != nil {
		t.Fatal(err)
	}
	backup, err := cli.Get(ctx, sk)
	if err != nil || len(backup.Kvs) != 1 {
		t.Fatalf("read %s: %v", sk, err)
	}
	if l, err = s.Acquire(ctx, req); err != nil || l.Fence != 2 {
		t.Fatalf("second term: %+v, %v; want fence 2", l, err)
	}
	live := l
	// The backup comes back while the second term is live: its Renew.
	if _, err := cli.Put(ctx, sk, string(backup.Kvs[0].Value)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Renew(ctx, live); !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("Renew after the slot's fence went back from 2 to 1: %v; want ErrCorrupt", err)
	}
	// And an Acquire (the term would get fence 2 again).
	l3, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "p", Incarnation: "j", TTL: time.Minute})
	if !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("Acquire after the slot's fence went back from 2 to 1: %+v, %v; want ErrCorrupt", l3, err)
	}
	// Deleted outright: the fence would start again at 1.
	if _, err := cli.Delete(ctx, sk); err != nil {
		t.Fatal(err)
	}
	l4, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "p", Incarnation: "j", TTL: time.Minute})
	if !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("Acquire after the slot key (fence 2) was deleted: %+v, %v; want ErrCorrupt", l4, err)
	}
	// Another store, which saw nothing, takes the slot: the guard is what
	// this store saw, not a repair.
	if l5, err := openShifted(t, prefix, 0).Acquire(ctx, req); err != nil || l5.Fence != 1 {
		t.Errorf("a fresh store's Acquire: %+v, %v; want fence 1", l5, err)
	}
}
