package etcd

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// TestSealSurvivesDeletedNamespaceKey: an operator deletes the namespace
// key of a sealed namespace (etcdctl del, the slot keys stay). Neither a
// held term's Renew nor another store's Seed or Acquire may take that as "not
// sealed": the slots' history is still there, so a namespace key missing
// beside it is corrupt, not a fresh namespace; nor may KeepLayout.
func TestSealSurvivesDeletedNamespaceKey(t *testing.T) {
	prefix := freshPrefix("sealdel")
	a, _ := openCounting(t, prefix)
	b, _ := openCounting(t, prefix)
	ctx := t.Context()
	ns := store.Namespace{Name: "orders", Limit: 4, Tolerance: time.Second}
	l, err := a.Slots().Acquire(ctx, ns, "a", store.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Slots().Seal(ctx, ns.Name); err != nil {
		t.Fatal(err)
	}
	cli := rawClient(t)
	if resp, err := cli.Delete(ctx, prefix+"/ns/orders"); err != nil || resp.Deleted != 1 {
		t.Fatalf("delete the namespace key: %v (%+v)", err, resp)
	}
	if _, err := a.Slots().Renew(ctx, l); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("Renew after the sealed namespace's key was deleted: %v; want ErrLeaseLost", err)
	}
	if err := b.Slots().Seed(ctx, ns, 2, 10, 10); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("Seed after the sealed namespace's key was deleted: %v; want ErrCorrupt", err)
	}
	// KeepLayout creates a missing namespace as Acquire does (see
	// driver.LayoutKeeper), so it refuses alike.
	err = b.Raw(func(d driver.Store) error {
		_, err := d.(driver.LayoutKeeper).KeepLayout(ctx, driver.Namespace{Name: ns.Name, Limit: ns.Limit, Tolerance: ns.Tolerance}, "layout")
		return err
	})
	if !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("KeepLayout after the sealed namespace's key was deleted: %v; want ErrCorrupt", err)
	}
	if l2, err := b.Slots().Acquire(ctx, ns, "b", store.AcquireOptions{}); err == nil {
		t.Errorf("Acquire after the sealed namespace's key was deleted started slot %d fence %d; want ErrCorrupt", l2.Slot, l2.Fence)
	} else if !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("Acquire after the sealed namespace's key was deleted: %v; want ErrCorrupt", err)
	}
}

// TestSealLostAnswers: a store whose transactions lose every third answer
// (applied, then retried) seals namespaces in use and missing ones: each
// seal returns nil, the namespace is sealed (a second seal is a no-op),
// and another store's Acquire there gives ErrSealed.
func TestSealLostAnswers(t *testing.T) {
	prefix := freshPrefix("seallost")
	var lost atomic.Int64
	lossy := openLossy(t, prefix, &lost)
	other, _ := openCounting(t, prefix)
	ctx := t.Context()
	var names []string
	for i := range 8 {
		name := fmt.Sprintf("ns%d", i)
		names = append(names, name)
		if i%2 == 0 {
			if _, err := other.Slots().Acquire(ctx, store.Namespace{Name: name, Limit: 2}, "a", store.AcquireOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, name := range names {
		if err := lossy.Slots().Seal(ctx, name); err != nil {
			t.Fatalf("seal of %s with lost answers: %v", name, err)
		}
		if err := lossy.Slots().Seal(ctx, name); err != nil {
			t.Fatalf("second seal of %s: %v", name, err)
		}
		if _, err := other.Slots().Acquire(ctx, store.Namespace{Name: name, Limit: 2}, "b", store.AcquireOptions{}); !errors.Is(err, store.ErrSealed) {
			t.Errorf("Acquire in %s after the seal: %v, want ErrSealed", name, err)
		}
	}
	if lost.Load() == 0 {
		t.Fatal("no answer was lost")
	}
	t.Logf("%d answers lost", lost.Load())
}
