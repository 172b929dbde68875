package etcd

import (
	"errors"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// TestPurgeSparesNestedStore: two stores whose prefixes nest (/p and
// /p/x, beside the outer one's layout). The outer store's Purge must not
// end the inner one's lock hold (a live lease's key) nor delete its keys
// (a fresh process of the inner store would hand its values out again
// from 0): it deletes nothing and says why. Likewise with a store inside
// the outer one's range keys (/p/range/v2), which Open now refuses, left
// by an earlier release: its keys are the outer store's range keys.
func TestPurgeSparesNestedStore(t *testing.T) {
	ctx := t.Context()
	ep := sharedServer(t).Endpoints()[0]
	outerPrefix := freshPrefix("nested")
	innerPrefix := outerPrefix + "/x"
	outer, err := OpenStore(ctx, &Options{Endpoints: []string{ep}, Prefix: outerPrefix})
	if err != nil {
		t.Fatal(err)
	}
	defer outer.Close()
	inner, err := OpenStore(ctx, &Options{Endpoints: []string{ep}, Prefix: innerPrefix})
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	for _, withLock := range []bool{true, false} {
		r, err := inner.Ranges().Next(ctx, "k", 10)
		if err != nil {
			t.Fatal(err)
		}
		var l *store.Lock
		if withLock {
			if l, err = inner.Locks().Lock(ctx, "held"); err != nil {
				t.Fatal(err)
			}
		}
		deleted, err := outer.Purge(ctx)
		if err == nil {
			t.Errorf("lock held=%v: the outer store's Purge deleted %q, the inner store's keys among them", withLock, deleted)
		} else if withLock && !errors.Is(err, store.ErrLocked) {
			t.Errorf("Purge with the inner store's lock held: %v; want ErrLocked", err)
		}
		if l != nil {
			select {
			case <-l.Lost():
				t.Errorf("the outer store's Purge ended the inner store's hold")
			default:
			}
			if err := l.Unlock(ctx); err != nil {
				t.Errorf("Unlock after the purge: %v", err)
			}
		}
		fresh, err := OpenStore(ctx, &Options{Endpoints: []string{ep}, Prefix: innerPrefix})
		if err != nil {
			t.Fatal(err)
		}
		again, err := fresh.Ranges().Next(ctx, "k", 10)
		fresh.Close()
		if err != nil {
			t.Fatal(err)
		}
		if again.Start <= r.Start {
			t.Fatalf("a fresh inner store got [%d, +10) again after the outer store's Purge (handed out before: %d)", again.Start, r.Start)
		}
	}
	cli := rawClient(t)
	legacy := outerPrefix + "/range/v2"
	if _, err := cli.Put(ctx, legacy+"/meta", "id="+driver.NewStoreID()); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, legacy+"/range/k", "10"); err != nil {
		t.Fatal(err)
	}
	inner.Close()
	if _, err := cli.Delete(ctx, innerPrefix+"/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if deleted, err := outer.Purge(ctx); !errors.Is(err, store.ErrConfigMismatch) || !strings.Contains(err.Error(), legacy+"/meta") {
		t.Errorf("the outer store's Purge with a store inside its range keys: %q, %v; want ErrConfigMismatch naming %s/meta", deleted, err, legacy)
	}
	if resp, err := cli.Get(ctx, legacy+"/range/k"); err != nil || len(resp.Kvs) != 1 {
		t.Errorf("the nested store's key after the refused purge: %v, %v", resp, err)
	}
}
