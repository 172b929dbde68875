package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestIdentity: the root carries the store's identity from its creation,
// also when it is made with the parents of a deep key's node;
// create=false neither creates a missing root nor writes an identity; a
// root made without one gets one from the first writer asking, the same
// for writers asking at once; a purge keeps it.
func TestIdentity(t *testing.T) {
	versions := zktest.Versions()
	addr := zktest.StartServer(t, versions[len(versions)-1]).Addr()
	conn := rawConn(t, addr)
	ctx := t.Context()

	t.Run("Missing", func(t *testing.T) {
		o := testOptions(addr, map[string]string{"create": "false"})
		_, err := open(o, nil)
		if !errors.Is(err, driver.ErrNotFound) || !strings.Contains(err.Error(), "no store at root "+o["root"]) {
			t.Fatalf("create=false on a missing root: %v, want ErrNotFound saying no store at the root", err)
		}
		if ok, _, err := conn.Exists(o["root"]); err != nil || ok {
			t.Fatalf("root after create=false: exists %v (%v)", ok, err)
		}
	})
	t.Run("Created", func(t *testing.T) {
		o := testOptions(addr, nil)
		w := openTest(t, o, nil)
		if _, err := w.Next(ctx, "orders", 10); err != nil {
			t.Fatal(err)
		}
		data, _, err := conn.Get(o["root"])
		if err != nil || !strings.HasPrefix(string(data), "store_id=") {
			t.Fatalf("root data after the first write: %q (%v)", data, err)
		}
		id, err := w.StoreID(ctx)
		if err != nil || len(id) != 32 || string(data) != "store_id="+id+"\n" {
			t.Fatalf("StoreID %q (%v), root data %q", id, err, data)
		}
		ro := testOptions(addr, map[string]string{"root": o["root"], "create": "false"})
		if got, err := openTest(t, ro, nil).StoreID(ctx); err != nil || got != id {
			t.Fatalf("StoreID with create=false: %q (%v), want %q", got, err, id)
		}
		if other, err := openTest(t, testOptions(addr, nil), nil).StoreID(ctx); err != nil || other == id {
			t.Fatalf("another root's StoreID: %q (%v), the first %q", other, err, id)
		}
		if _, err := w.Purge(ctx); err != nil {
			t.Fatal(err)
		}
		if got, err := w.StoreID(ctx); err != nil || got != id {
			t.Fatalf("StoreID after a purge: %q (%v), want %q", got, err, id)
		}
	})
	t.Run("DeepKey", func(t *testing.T) {
		// The root two levels below nodes that do not exist, made by
		// the first Nexts of keys 40 levels deep, from stores at once:
		// the missing nodes are made in one multi (createParents), and
		// the root among them must get the identity, the others nothing.
		top := randomRoot()
		root := top + "/a/b"
		const n = 4
		stores := make([]*driverStore, n)
		keys := make([]string, n)
		for i := range stores {
			stores[i] = openTest(t, testOptions(addr, map[string]string{"root": root}), nil)
			keys[i] = fmt.Sprintf("k%d", i) + strings.Repeat("/l", 39)
		}
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Go(func() {
				if _, err := s.Next(context.WithoutCancel(ctx), keys[i], 1); err != nil {
					t.Errorf("first Next of key %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		data, _, err := conn.Get(root)
		if err != nil || !strings.HasPrefix(string(data), "store_id=") {
			t.Fatalf("root data after the first Nexts of deep keys: %q (%v)", data, err)
		}
		for i, s := range stores {
			if id, err := s.StoreID(ctx); err != nil || string(data) != "store_id="+id+"\n" {
				t.Fatalf("StoreID of store %d: %q (%v), root data %q", i, id, err, data)
			}
		}
		key := stores[0].rangePath(keys[0])
		for p := key[:strings.LastIndex(key, "/")]; p != ""; p = p[:strings.LastIndex(p, "/")] {
			if p == root {
				continue
			}
			if d, _, err := conn.Get(p); err != nil || len(d) != 0 {
				t.Fatalf("%s, made with the key's node: data %q (%v), want empty", p, d, err)
			}
		}
	})
	t.Run("OldRoot", func(t *testing.T) {
		root := randomRoot()
		old := "slot_fence_floor=7\n"
		if _, err := conn.Create(root, []byte(old), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		ro := openTest(t, testOptions(addr, map[string]string{"root": root, "create": "false"}), nil)
		if _, err := ro.StoreID(ctx); !errors.Is(err, driver.ErrNotFound) {
			t.Fatalf("StoreID of an old root with create=false: %v, want ErrNotFound", err)
		}
		if data, _, err := conn.Get(root); err != nil || string(data) != old {
			t.Fatalf("create=false changed the root: %q (%v)", data, err)
		}
		// Writers asking at once agree on one identity.
		const n = 4
		ids := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			s := openTest(t, testOptions(addr, map[string]string{"root": root}), nil)
			wg.Go(func() {
				var err error
				if ids[i], err = s.StoreID(context.WithoutCancel(ctx)); err != nil {
					t.Errorf("StoreID of writer %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		for i := range ids {
			if ids[i] != ids[0] || ids[i] == "" {
				t.Fatalf("writers read identities %q", ids)
			}
		}
		data, _, err := conn.Get(root)
		if err != nil || string(data) != old+"store_id="+ids[0]+"\n" {
			t.Fatalf("root data %q (%v): want the old line kept and the identity added", data, err)
		}
		if got, err := ro.StoreID(ctx); err != nil || got != ids[0] {
			t.Fatalf("StoreID with create=false afterwards: %q (%v)", got, err)
		}
	})
}
