package etcd

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// TestNestedRangeStore: a store at P/range inside the store at P: the outer
// store's range key range/k is the inner store's key k. The inner store is
// refused at Open, naming the outer one. (Were it opened, its Purge would
// delete range/k, and a fresh process of the outer store, never purged,
// would hand k's values out again: the test goes on to check that.)
func TestNestedRangeStore(t *testing.T) {
	ctx := t.Context()
	ep := sharedServer(t).Endpoints()
	outer := freshPrefix("nestedrange")
	a, err := OpenStore(ctx, &Options{Endpoints: ep, Prefix: outer})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	first, err := a.Ranges().Next(ctx, "range/k", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, inner := range []string{"/range", "/range/k/x"} {
		b, err := OpenStore(ctx, &Options{Endpoints: ep, Prefix: outer + inner})
		if err == nil {
			deleted, perr := b.Purge(ctx)
			b.Close()
			t.Errorf("Open of %s%s, inside the range keys of the store at %s: no error (its Purge: %q, %v)", outer, inner, outer, deleted, perr)
		} else if !errors.Is(err, store.ErrConfigMismatch) || !strings.Contains(err.Error(), outer+"/meta") {
			t.Errorf("Open of %s%s: %v; want ErrConfigMismatch naming %s/meta", outer, inner, err, outer)
		}
	}
	fresh, err := OpenStore(ctx, &Options{Endpoints: ep, Prefix: outer})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if r, err := fresh.Ranges().Next(ctx, "range/k", 10); err != nil || r.Start < first.End {
		t.Errorf("a fresh outer store's Next of range/k = %v, %v; [%d, %d) was handed out before", r, err, first.Start, first.End)
	}
}

// TestNestedRangeStoreFirst: the other order: a store at P/range/v2 exists
// (a key used), then a store is created at P. The creation is refused,
// naming the inner store's metadata key, and writes nothing; the inner
// store's key goes on.
func TestNestedRangeStoreFirst(t *testing.T) {
	ctx := t.Context()
	ep := sharedServer(t).Endpoints()
	outer := freshPrefix("nestedrangefirst")
	inner, err := OpenStore(ctx, &Options{Endpoints: ep, Prefix: outer + "/range/v2"})
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	if _, err := inner.Ranges().Next(ctx, "k", 10); err != nil {
		t.Fatal(err)
	}
	a, err := OpenStore(ctx, &Options{Endpoints: ep, Prefix: outer})
	if err == nil {
		a.Close()
		t.Fatalf("a store created around the one at %s/range/v2: no error", outer)
	}
	if !errors.Is(err, store.ErrConfigMismatch) || !strings.Contains(err.Error(), outer+"/range/v2/meta") {
		t.Errorf("a store created around another: %v; want ErrConfigMismatch naming %s/range/v2/meta", err, outer)
	}
	if resp, err := rawClient(t).Get(ctx, outer+"/meta"); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("the refused store's metadata key: %v, %v; want none", resp.Kvs, err)
	}
	if r, err := inner.Ranges().Next(ctx, "k", 10); err != nil || r.Start != 10 {
		t.Errorf("the inner store's next Next = %v, %v; want start 10", r, err)
	}
}

// openNestRace opens (connects) a store on prefix whose first write (its
// metadata key's creation) first runs between; it returns Connect's error.
func openNestRace(t *testing.T, prefix string, between func()) error {
	t.Helper()
	cfg, err := parseOptions(map[string]string{"endpoints": sharedServer(t).Endpoints()[0], "prefix": prefix})
	if err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	armed.Store(true)
	d := newStore(cfg, nil)
	d.dialOpt = beforeWrite(&armed, between)
	err = d.Connect(t.Context())
	d.Close()
	return err
}

// TestNestedCreationRace: two stores, one inside the other's range keys,
// created at once: each has read that the other is not there when the
// other is created, before its own creation's write goes out. One of the
// two must be refused, naming the other.
func TestNestedCreationRace(t *testing.T) {
	ctx := t.Context()
	ep := sharedServer(t).Endpoints()
	for _, innerLast := range []bool{true, false} {
		outer := freshPrefix("nestrace")
		inner := outer + "/range/v2"
		first, last := outer, inner
		if !innerLast {
			first, last = inner, outer
		}
		var firstErr error
		err := openNestRace(t, last, func() {
			var st *store.Store
			if st, firstErr = OpenStore(ctx, &Options{Endpoints: ep, Prefix: first}); firstErr == nil {
				st.Close()
			}
		})
		if firstErr != nil {
			t.Fatalf("the store created first, at %s: %v", first, firstErr)
		}
		if err == nil {
			t.Errorf("stores at %s and %s were both created", outer, inner)
		} else if !errors.Is(err, store.ErrConfigMismatch) || !strings.Contains(err.Error(), first) {
			t.Errorf("the store at %s, created while the one at %s was: %v; want ErrConfigMismatch naming it", last, first, err)
		}
	}
}

// TestPurgeInsideOuterStore: a store whose prefix lies in another's range
// keys (P/range), opened before the outer store's metadata key was written
// (by a release that did not check, or by hand): its Purge would delete
// the outer store's range keys with its own. It refuses, naming the outer
// store, and deletes nothing.
func TestPurgeInsideOuterStore(t *testing.T) {
	ctx := t.Context()
	ep := sharedServer(t).Endpoints()
	outer := freshPrefix("purgeinside")
	inner, err := OpenStore(ctx, &Options{Endpoints: ep, Prefix: outer + "/range"})
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	if _, err := inner.Ranges().Next(ctx, "k", 10); err != nil {
		t.Fatal(err)
	}
	cli := rawClient(t)
	if _, err := cli.Put(ctx, outer+"/meta", "id="+driver.NewStoreID()); err != nil {
		t.Fatal(err)
	}
	deleted, err := inner.Purge(ctx)
	if err == nil || !errors.Is(err, store.ErrConfigMismatch) || !strings.Contains(err.Error(), outer+"/meta") {
		t.Errorf("Purge of a store inside the one at %s: %q, %v; want ErrConfigMismatch naming %s/meta", outer, deleted, err, outer)
	}
	if resp, err := cli.Get(ctx, outer+"/range/range/k"); err != nil || len(resp.Kvs) != 1 {
		t.Errorf("the outer store's range key range/k after the refused purge: %v, %v", resp, err)
	}
}
