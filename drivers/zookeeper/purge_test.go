package zookeeper

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestPurgeFences: slot fences never repeat across a purge. The highest
// fence a purge deletes goes into the root's slot_fence_floor line before
// anything is deleted; a namespace created later copies it, and its slots
// start above it.
func TestPurgeFences(t *testing.T) {
	zktest.EachVersion(t, func(t *testing.T, srv *zktest.Server) {
		addr := srv.Addr()
		s := openTest(t, testOptions(addr, nil), nil)
		conn := rawConn(t, addr)
		ctx := t.Context()
		ns := driver.Namespace{Name: "fenced", Limit: 4}
		l := mustAcquire(t, s, slotRequest(ns, "owner", "run"))
		if err := s.Release(ctx, l, l.Floor); err != nil {
			t.Fatal(err)
		}
		// A slot restored by hand in another namespace, with a higher fence.
		other := driver.Namespace{Name: "restored", Limit: 4}
		// Released: a live term stops a purge (TestPurgeLiveLease).
		if err := s.Release(ctx, mustAcquire(t, s, slotRequest(other, "owner", "run")), 0); err != nil {
			t.Fatal(err)
		}
		mustCreatePath(t, conn, s.slotPath(other.Name, 3), string(formatSlot(slotNode{fence: 40, nextFloor: 7})))

		if _, err := s.Purge(ctx); err != nil {
			t.Fatal(err)
		}
		if data, _, err := conn.Get(s.root); err != nil || !strings.Contains(string(data), "slot_fence_floor=40\n") {
			t.Errorf("root after the purge holds %q (err %v), want slot_fence_floor=40", data, err)
		}
		l = mustAcquire(t, s, slotRequest(ns, "owner", "run"))
		if l.Fence != 41 || l.Floor != 0 {
			t.Errorf("first term after the purge: fence %d floor %d, want 41 and 0", l.Fence, l.Floor)
		}
		if err := s.Release(ctx, l, l.Floor); err != nil {
			t.Fatal(err)
		}
		if data, _, err := conn.Get(s.nsPath(ns.Name)); err != nil || !strings.Contains(string(data), "fence_floor=40\n") {
			t.Errorf("namespace created after the purge holds %q (err %v), want fence_floor=40", data, err)
		}

		// A second purge raises the floor to the highest fence since: 41.
		if err := s.SeedSlot(ctx, other, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Purge(ctx); err != nil {
			t.Fatal(err)
		}
		if l := mustAcquire(t, s, slotRequest(other, "owner", "run")); l.Fence != 42 {
			t.Errorf("first term after a second purge has fence %d, want 42", l.Fence)
		}

		// A fence line that does not parse stops the purge before it
		// deletes anything: that fence could not be kept.
		mustCreatePath(t, conn, s.slotPath(other.Name, 2), "owner=\nfence=x\n")
		_, err := s.Purge(ctx)
		if !errors.Is(err, driver.ErrCorrupt) {
			t.Errorf("Purge with an unreadable fence: %v, want ErrCorrupt", err)
		}
		if names, _, err := conn.Children(s.nsPath(other.Name)); err != nil || len(names) < 2 {
			t.Errorf("after the refused purge %s has children %v (err %v), want them kept", s.nsPath(other.Name), names, err)
		}
	})
}

// TestPurgeStaleRelease: a lease taken before a purge cannot write the slot
// node recreated after it, even at the same version (both nodes are at
// version 1 after their acquire): its Release gives ErrLeaseLost, and the
// new term keeps its fence. Before, the stale Release compare-and-set the
// new node back to the old term's fence, and fences repeated.
func TestPurgeStaleRelease(t *testing.T) {
	zktest.EachVersion(t, func(t *testing.T, srv *zktest.Server) {
		addr := srv.Addr()
		s := openTest(t, testOptions(addr, nil), nil)
		ctx := t.Context()
		ns := driver.Namespace{Name: "stale", Limit: 1}
		// A holder paused past its ceiling: only then may a purge go
		// (TestPurgeLiveLease).
		req := slotRequest(ns, "a", "run")
		req.TTL = 100 * time.Millisecond
		old := mustAcquire(t, s, req)
		purgeOnceFree(t, s, old)
		cur := mustAcquire(t, s, slotRequest(ns, "b", "run"))
		if err := s.Release(ctx, old, 1); !errors.Is(err, driver.ErrLeaseLost) {
			t.Errorf("Release of a lease taken before the purge: %v, want ErrLeaseLost", err)
		}
		if _, err := s.Renew(ctx, cur); err != nil {
			t.Errorf("the term after the purge (fence %d) was overwritten by a stale Release: Renew: %v", cur.Fence, err)
		}
	})
}

// TestPurgeSparesForeignNodes: a node outside the store's layout, such as
// another store's root inside this one (/ids/v2 in /ids, or deeper in an
// owner index or a lock's tree), stops the purge before anything is
// deleted: the other store keeps its keys. A purge of the whole tree would
// have started the inner store's keys again at 0.
func TestPurgeSparesForeignNodes(t *testing.T) {
	addr := zktest.StartServer(t, zktest.Versions()[0]).Addr()
	for _, sub := range []string{"/v2", "/owner/v2", "/lock/v2", "/owner/ns/o/x"} {
		t.Run(strings.TrimPrefix(sub, "/"), func(t *testing.T) {
			outer := openTest(t, testOptions(addr, nil), nil)
			ctx := t.Context()
			if _, err := outer.Next(ctx, "orders", 100); err != nil {
				t.Fatal(err)
			}
			inner := openTest(t, testOptions(addr, map[string]string{"root": outer.root + sub}), nil)
			if _, err := inner.Next(ctx, "orders", 7); err != nil {
				t.Fatal(err)
			}
			deleted, err := outer.Purge(ctx)
			if !errors.Is(err, driver.ErrCorrupt) || !strings.Contains(err.Error(), outer.root+sub) || len(deleted) > 0 {
				t.Fatalf("purge of %s with a store at %s inside: deleted %v, %v; want ErrCorrupt naming it, nothing deleted",
					outer.root, outer.root+sub, deleted, err)
			}
			for _, st := range []*driverStore{outer, inner} {
				if next, _, err := st.Current(ctx, "orders"); err != nil || next == 0 {
					t.Errorf("%s after the refused purge: orders at %d (%v), want it kept", st.root, next, err)
				}
			}
		})
	}
}
