package zookeeper

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestLockSealPastOwnStray: a store's next attempt leaves its own stray
// nodes out of its queue (e13f7dc), but a node that was queued behind one
// before a seal is a waiter queued before the seal: it is never granted.
// A Lock whose node was created behind another Lock's of the same store,
// both before SealLocks and RaiseLockFences, the other one then giving up
// before its create's answer came: the later node must not be granted
// (its fence, from before the raise, would be below the raise's floor).
func TestLockSealPastOwnStray(t *testing.T) {
	onEachVersion(t, func(*zktest.Server) []serverCheck {
		return []serverCheck{{"StrayAheadAtSeal", testLockSealPastOwnStray}}
	})
}

func testLockSealPastOwnStray(t *testing.T, addr string) {
	const name = "sealstray"
	w := new(wire)
	// T of 10s: the answers held below stay well inside the liveness rule.
	opts := testOptions(addr, map[string]string{"sessionTimeout": "10s"})
	a := openTest(t, opts, w)
	sealer := openTest(t, testOptions(addr, map[string]string{"root": opts["root"]}), nil)
	conn := rawConn(t, addr)
	parent := a.lockParent(name)
	ctx := t.Context()
	lockOnce(t, a, "warm", "warm") // a knows the root
	// A parent that stays while the test holds a's answers: a lock parent
	// that had children and has none is a container the test servers
	// delete within 500 ms, and a create that found it gone (at a CI load
	// of 28, after a Lock and Unlock of the name here) could not make it
	// again with its answers held. Its child "keep" is counted below.
	keepLockParent(t, conn, parent, zk.WorldACL(zk.PermAll))

	release := w.holdAnswers()
	defer release()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	first := lockAsync(t, sctx, a, name, "first")
	lockEventually(t, 10*time.Second, "the first node created", func() bool { return len(lockNodes(t, conn, parent)) == 1+1 })
	second := lockAsync(t, ctx, a, name, "second")
	lockEventually(t, 10*time.Second, "the second node created", func() bool { return len(lockNodes(t, conn, parent)) == 1+2 })

	floor, err := sealer.SealLocks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raised := floor + 1<<40
	if err := sealer.RaiseLockFences(ctx, raised); err != nil {
		t.Fatal(err)
	}
	// The first Lock gives up before it heard of its node: a stray, never
	// held, ahead of the second node.
	cancel()
	if r := awaitLock(t, first, 10*time.Second, "the first Lock, cancelled"); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the first Lock, cancelled before its create's answer: %v, want context.Canceled", r.err)
	}
	release()
	r := awaitLock(t, second, 30*time.Second, "the second Lock, queued before the seal")
	if r.err == nil {
		defer r.l.Unlock(ctx)
		t.Fatalf("a Lock queued before SealLocks behind its store's own node was granted after the seal, "+
			"undone by RaiseLockFences(%d), at fence %d: want ErrSealed", raised, r.l.Fence())
	}
	if !errors.Is(r.err, driver.ErrSealed) {
		t.Fatalf("the second Lock, queued before the seal: %v, want ErrSealed", r.err)
	}
}
