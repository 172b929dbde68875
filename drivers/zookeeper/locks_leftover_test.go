package zookeeper

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestLockLateCreate: go-zookeeper keeps unsent requests across a
// reconnect, even into a new session. A waiter's create is queued behind a
// held request; the waiter's context ends; the connection is cut and the
// reconnect held (three addresses, so go-zookeeper does not give up on the
// queue) until the old session expired. The create is then sent in the new
// session and answered: its node must be deleted, or it would block the
// lock until the store closed. The removal waits for the create's answer
// however long it takes (it never gives up on a timer, see
// TestLockAbandonedDuringOutage).
func TestLockLateCreate(t *testing.T) {
	zktest.EachVersion(t, testLockLateCreate)
}

func testLockLateCreate(t *testing.T, srv *zktest.Server) {
	const name = "late"
	addr := srv.Addr()
	proxies := []*zktest.Proxy{zktest.NewProxy(t, addr), zktest.NewProxy(t, addr), zktest.NewProxy(t, addr)}
	addrs := make([]string, len(proxies))
	for i, p := range proxies {
		addrs[i] = p.Addr()
	}
	var w wire
	opts := testOptions(strings.Join(addrs, ","), map[string]string{"sessionTimeout": "2s", "connectionTimeout": "60s"})
	s := openTest(t, opts, &w)
	holder := openTest(t, testOptions(addr, map[string]string{"root": opts["root"]}), nil)
	direct := rawConn(t, addr)
	ctx := t.Context()
	parent := s.lockParent(name)
	h, err := holder.Lock(ctx, name, "holder", true)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unlock(ctx)
	want := lockNodes(t, direct, parent)
	// An ephemeral node of s's first session shows when the server
	// expired it.
	marker := opts["root"] + "/marker"
	if _, err := s.conn.Create(marker, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	// Hold go-zookeeper's send loop on a read, so the create queues; the
	// read's write then fails, ending the connection with the create still
	// queued.
	held, release := make(chan struct{}), make(chan struct{})
	var armed atomic.Bool
	armed.Store(true)
	w.setFail(func(op int32) bool {
		if op == opGetData && armed.CompareAndSwap(true, false) {
			close(held)
			<-release
			return true
		}
		return false
	})
	go s.conn.Get("/") // fails with the cut below
	awaitHeld(t, held, "the read was not sent")
	creates := w.requests(opLockCreate)
	oldSID := s.conn.SessionID()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = s.Lock(short, name, "late", true)
	wantIs(t, err, context.DeadlineExceeded, "Lock whose create is queued")

	// Cut the connection and hold every reconnect, then let the send loop
	// see the cut.
	for _, p := range proxies {
		p.Freeze()
		p.Cut()
		p.Restore()
	}
	close(release)
	lockEventually(t, 30*time.Second, "the server expires the first session", func() bool {
		ok, _, err := direct.Exists(marker)
		return err == nil && !ok
	})
	// Any change of the lock's children from now on is the late create.
	_, _, changed, err := direct.ChildrenW(parent)
	if err != nil {
		t.Fatal(err)
	}
	if n := lockedCount(s); n != 1 {
		t.Errorf("the store tracks %d nodes while the create is queued, want 1 (its removal waits)", n)
	}
	t.Logf("session %#x expired at the server; thawing the reconnect", oldSID)
	for _, p := range proxies {
		p.Thaw()
	}
	lockEventually(t, 30*time.Second, "the queued create sent in the new session", func() bool { return w.requests(opLockCreate) > creates })
	select {
	case ev := <-changed:
		t.Logf("the late create landed (%v) in session %#x", ev.Type, s.conn.SessionID())
	case <-time.After(20 * time.Second):
		t.Fatalf("the late create did not land within 20s (session now %#x): the fault did not happen as arranged", s.conn.SessionID())
	}
	lockEventually(t, 20*time.Second, "the late create's node deleted", func() bool {
		return slices.Equal(lockNodes(t, direct, parent), want)
	})
	lockEventually(t, 20*time.Second, "the store forgets the node", func() bool { return lockedCount(s) == 0 })
}

// TestLockAbandonedWaitsShareWatch: Lock calls that give up waiting on one
// holder leave one watch in the connection, not one each: the store sets a
// watch on the holder's node once (one getData on the wire) and every later
// waiter shares it.
func TestLockAbandonedWaitsShareWatch(t *testing.T) {
	for _, version := range zktest.Versions() {
		t.Run(version, func(t *testing.T) {
			const name, waits = "shared", 30
			addr := zktest.StartServer(t, version).Addr()
			var w wire
			// Sessions are not the subject: at load 30 a 4s session went
			// unconfirmed, the holder's lock was lost and a wait won it.
			opts := testOptions(addr, map[string]string{"sessionTimeout": "20s"})
			s := openTest(t, opts, &w)
			holder := openTest(t, opts, nil)
			ctx := t.Context()
			h, err := holder.Lock(ctx, name, "holder", true)
			if err != nil {
				t.Fatal(err)
			}
			gets := w.requests(opGetData)
			for i := range waits {
				// Each call queues, reaches its wait and gives up; its node is
				// removed before the next call.
				short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				_, err := s.Lock(short, name, "w", true)
				cancel()
				wantIs(t, err, context.DeadlineExceeded, "Lock %d behind the holder", i)
			}
			got := w.requests(opGetData) - gets
			t.Logf("%d abandoned waits set %d watches", waits, got)
			// One, or a few more if a loaded machine cost the store its
			// connection and it watched again; one per wait would be 30.
			if got < 1 || got > 3 {
				t.Errorf("%d abandoned waits behind one holder set %d watches (getData requests), want 1 shared", waits, got)
			}
			s.sess.mu.Lock()
			shared := len(s.sess.watches)
			s.sess.mu.Unlock()
			if shared != 1 {
				t.Errorf("the store tracks %d watches, want 1", shared)
			}
			if err := h.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			lockEventually(t, 20*time.Second, "the shared watch fired and dropped", func() bool {
				s.sess.mu.Lock()
				defer s.sess.mu.Unlock()
				return len(s.sess.watches) == 0
			})
		})
	}
}
