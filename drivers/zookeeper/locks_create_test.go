package zookeeper

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/leakcheck"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestLockCreate attacks the one-round-trip create (lock_create.go): the
// fence taken from the multi's setData across a parent deleted and made
// again, a create retried after NoNode, stores that may and may not write
// the parent taking turns, and the listing sent behind the create held
// back while the Lock call ends or the store closes.
func TestLockCreate(t *testing.T) {
	onEachVersion(t, func(*zktest.Server) []serverCheck {
		return []serverCheck{
			{"ParentGoneAnswerLost", testLockParentGoneAnswerLost},
			{"ContainerRecreatedFence", testLockContainerRecreatedFence},
			{"NoNodeRetryFence", testLockNoNodeRetryFence},
			{"WritersAndFallbackTakeTurns", testLockWritersAndFallback},
			{"EarlyListingHeld", testLockEarlyListingHeld},
			{"EarlyListingAcrossExpiry", testLockEarlyListingAcrossExpiry},
			{"CreateNeverWritten", testLockCreateNeverWritten},
		}
	})
}

// nodeCzxid returns the czxid of the only lock node under parent.
func nodeCzxid(t *testing.T, conn *zk.Conn, parent string) int64 {
	t.Helper()
	nodes := slices.DeleteFunc(lockNodes(t, conn, parent), func(k string) bool { return k == "keep" })
	if len(nodes) != 1 {
		t.Fatalf("lock nodes: %q, want one", nodes)
	}
	_, stat, err := conn.Get(parent + "/" + nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	return stat.Czxid
}

// deleteParent deletes an unused lock name's node by hand, as the server
// does with an unused container.
func deleteParent(t *testing.T, conn *zk.Conn, parent string) {
	t.Helper()
	if err := conn.Delete(parent, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
}

// testLockParentGoneAnswerLost: the lock name's node is gone (an unused
// container the server deleted) and the answer to the first create, which
// the server refused with NoNode, is lost. Looking for the node by its
// GUID then finds no parent: the node was not created, so the Lock must
// make the parent and create again, not fail with "not found".
func testLockParentGoneAnswerLost(t *testing.T, addr string) {
	const name = "gone"
	s, w, conn, parent, first := steeredLock(t, addr, name)
	ctx := t.Context()
	deleteParent(t, conn, parent)
	sent := w.dropFirstAnswer(opLockCreate)
	long, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	l, err := s.Lock(long, name, "o", true)
	if !sent() {
		t.Fatal("no create was sent")
	}
	if err != nil {
		t.Fatalf("Lock whose create found no parent and lost its answer: %v", err)
	}
	if czxid := nodeCzxid(t, conn, parent); l.Fence() != czxid || l.Fence() <= first {
		t.Errorf("fence %d, want the node's czxid %d, above the earlier %d", l.Fence(), czxid, first)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testLockContainerRecreatedFence: once the server deleted an unused lock
// name's node, the next holder's fence, from its create's answer, is its
// node's czxid and above every earlier holder's, though sequence numbers
// start again.
func testLockContainerRecreatedFence(t *testing.T, addr string) {
	const name = "recreated"
	s := openTest(t, testOptions(addr, nil), nil)
	conn := rawConn(t, addr)
	ctx := t.Context()
	parent := s.lockParent(name)
	var last int64
	for round := range 2 {
		l, err := s.Lock(ctx, name, "o", true)
		if err != nil {
			t.Fatal(err)
		}
		if czxid := nodeCzxid(t, conn, parent); l.Fence() != czxid || l.Fence() <= last {
			t.Errorf("round %d: fence %d, want the node's czxid %d, above the earlier %d", round, l.Fence(), czxid, last)
		}
		last = l.Fence()
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		lockEventually(t, 30*time.Second, "the unused lock name's node deleted by the server", func() bool {
			ok, _, err := conn.Exists(parent)
			return err == nil && !ok
		})
	}
}

// testLockNoNodeRetryFence: the lock name's node is deleted while the
// create is on its way; the multi fails with NoNode as a whole, the store
// makes the parent and creates again, and the fence is the czxid of the
// node of that second create.
func testLockNoNodeRetryFence(t *testing.T, addr string) {
	const name = "nonode"
	s, w, conn, parent, first := steeredLock(t, addr, name)
	ctx := t.Context()
	multis := w.requests(opLockCreate)
	held, release := w.holdFirst(opLockCreate)
	ch := lockAsync(t, ctx, s, name, "o")
	awaitHeld(t, held, "no create was sent")
	deleteParent(t, conn, parent)
	close(release)
	r := awaitLock(t, ch, 20*time.Second, "Lock whose parent was deleted under its create")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := w.requests(opLockCreate) - multis; got != 2 {
		t.Errorf("%d creates sent, want 2 (refused with NoNode, then after the parent was made)", got)
	}
	if czxid := nodeCzxid(t, conn, parent); r.l.Fence() != czxid || r.l.Fence() <= first {
		t.Errorf("fence %d, want the node's czxid %d, above the earlier %d", r.l.Fence(), czxid, first)
	}
	if err := r.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testLockWritersAndFallback: two stores queue on one lock whose name's
// node only one of them may write (digest ACL): that one takes its fences
// from the multi, the other falls back to plain creates and reads them.
// Taking turns, every holder's fence is its node's czxid and above the
// last.
func testLockWritersAndFallback(t *testing.T, addr string) {
	const name = "mixed"
	secret := newSecret()
	writer := openTest(t, testOptions(addr, map[string]string{"auth": "digest:alice:" + secret, "acl": "open"}), nil)
	opts := testOptions(addr, nil)
	opts["root"] = writer.root
	other := openTest(t, opts, nil)
	conn := rawClient(t, addr, "digest:alice:"+secret)
	ctx := t.Context()
	parent := writer.lockParent(name)
	acl := append(zk.DigestACL(zk.PermAll, "alice", secret), zk.WorldACL(zk.PermCreate|zk.PermRead|zk.PermDelete)...)
	keepLockParent(t, conn, parent, acl)
	stores := []*driverStore{writer, other}
	held, err := writer.Lock(ctx, name, "s0", true)
	if err != nil {
		t.Fatal(err)
	}
	last := held.Fence()
	for turn := 1; turn <= 6; turn++ {
		next := stores[turn%2]
		ch := lockAsync(t, ctx, next, name, "next")
		lockEventually(t, 10*time.Second, "the next store queued", func() bool { return queueLength(ctx, writer, name) == 2 })
		if err := held.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		r := awaitLock(t, ch, 10*time.Second, "Lock of the next store")
		if r.err != nil {
			t.Fatal(r.err)
		}
		if czxid := nodeCzxid(t, conn, parent); r.l.Fence() != czxid || r.l.Fence() <= last {
			t.Errorf("turn %d: fence %d, want the node's czxid %d, above the last %d", turn, r.l.Fence(), czxid, last)
		}
		held, last = r.l, r.l.Fence()
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if writer.plainCreate.Load() || !other.plainCreate.Load() {
		t.Errorf("plain creates: writer %v, other %v; want false, true",
			writer.plainCreate.Load(), other.plainCreate.Load())
	}
}

// testLockEarlyListingHeld: the listing sent behind the create is held on
// its way. A Lock call whose context ends returns at once and removes its
// node; one whose store closes returns ErrClosed at once; and Close leaves
// no goroutine behind.
func testLockEarlyListingHeld(t *testing.T, addr string) {
	const name = "heldlisting"
	// The raw connection is closed before the check: under load it may
	// reconnect during the test, and its new send and receive loops are
	// not among the goroutines ignored as current (CI saw them as leaks).
	ignore := goleak.IgnoreCurrent()
	conn := rawConn(t, addr)
	defer leakcheck.VerifyNone(t, ignore)
	defer conn.Close()
	var w wire
	opts := testOptions(addr, map[string]string{"sessionTimeout": "10s"})
	s, err := open(opts, w.wrap)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	parent := s.lockParent(name)
	lockOnce(t, s, name, "o") // the store's first use of the name
	// Another store holds the lock from then on: an empty lock parent is
	// a container the test servers delete within 500 ms, and a create that
	// found it gone (at a CI load of 36) made the held listing stop every
	// request behind it, the parent's create included.
	keeper, err := open(opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer keeper.Close() // before the leak check
	kept, err := keeper.Lock(ctx, name, "keeper", true)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Unlock(ctx)

	// The context ends while the listing is held.
	held, release := w.holdFirst(opcodeChildren2)
	defer releaseOnFailure(t, release)
	cctx, cancel := context.WithCancel(ctx)
	ch := lockAsync(t, cctx, s, name, "o")
	awaitHeld(t, held, "no listing was sent")
	lockEventually(t, 10*time.Second, "the create applied", func() bool { return len(lockNodes(t, conn, parent)) == 2 })
	cancel()
	r := awaitLock(t, ch, 5*time.Second, "Lock cancelled while its first listing is held")
	wantIs(t, r.err, context.Canceled, "Lock cancelled while its first listing is held")
	close(release)
	lockEventually(t, 20*time.Second, "the cancelled Lock's node removed", func() bool {
		return len(lockNodes(t, conn, parent)) == 1 && lockedCount(s) == 0
	})

	// The store closes while the listing is held.
	held, release = w.holdFirst(opcodeChildren2)
	defer releaseOnFailure(t, release)
	ch = lockAsync(t, ctx, s, name, "o")
	awaitHeld(t, held, "no listing was sent")
	closeWhileHeld(t, s, ch, release, "Lock whose store closes while its first listing is held")
}

// releaseOnFailure lets a request held on the wire go when the test
// stopped before it did: else the store's Close waits for it for ever.
func releaseOnFailure(t *testing.T, release chan struct{}) {
	if t.Failed() {
		select {
		case <-release:
		default:
			close(release)
		}
	}
}

// closeWhileHeld closes s while a request of the Lock call that answers on
// ch is held: the call returns ErrClosed at once; once the request is
// released Close returns, and no create watch is left.
func closeWhileHeld(t *testing.T, s *driverStore, ch <-chan lockResult, release chan struct{}, what string) {
	t.Helper()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		s.Close()
	}()
	r := awaitLock(t, ch, 5*time.Second, what)
	wantIs(t, r.err, driver.ErrClosed, what)
	close(release)
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return")
	}
	if n := s.wire.writes.pending.Load(); n != 0 {
		t.Errorf("%d create watches left after Close", n)
	}
}

// testLockEarlyListingAcrossExpiry: b's create is written and answered,
// but the listing behind it is held in go-zookeeper (behind a read held on
// the wire, or on the wire itself) until b's session has expired and a
// waiter, a, has been granted the lock. The listing then goes out in b's
// next session, or fails with the old connection: either way b must not
// be granted while a holds, and b's later hold has a fence above a's,
// equal to its node's czxid.
func testLockEarlyListingAcrossExpiry(t *testing.T, addr string) {
	const name = "expiry"
	var w wire
	b := openTest(t, testOptions(addr, map[string]string{"sessionTimeout": "2s"}), &w)
	opts := testOptions(addr, map[string]string{"sessionTimeout": "10s"})
	opts["root"] = b.root
	a := openTest(t, opts, nil)
	conn := rawConn(t, addr)
	ctx := t.Context()
	parent := b.lockParent(name)
	lockOnce(t, b, name, "b") // creates the parents
	oldSID := b.conn.SessionID()

	var (
		mu      sync.Mutex
		stage   int     // 0: waiting for b's create; 1: hold the next read; 2: held; 3: released
		heldOp  int32   // the request held
		after   []int32 // requests written once released
		held    = make(chan struct{})
		release = make(chan struct{})
		once    sync.Once
	)
	// A failing test must not leave b's send loop held in the hook: Close
	// (b's cleanup, which runs after this one) waits for it.
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	// b's node is ephemeral on a 2s session that the held send loop lets
	// expire: on a loaded machine it may be gone before a poll sees it, so
	// its creation is observed through a children watch set beforehand.
	_, _, created, err := conn.ChildrenW(parent)
	if err != nil {
		t.Fatal(err)
	}
	w.setBefore(func(op int32) bool {
		mu.Lock()
		switch {
		case stage == 0 && op == opLockCreate:
			stage = 1
			mu.Unlock()
			// A read queued while the create is being written: the
			// listing is queued behind it, unless it comes first.
			go func() { _, _, _ = b.conn.Get(parent) }()
			return false
		case stage == 1 && (op == opGetData || op == opcodeChildren2):
			stage, heldOp = 2, op
			mu.Unlock()
			close(held)
			<-release
			return false
		case stage == 3 && len(after) < 4:
			after = append(after, op)
		}
		mu.Unlock()
		return false
	})
	chB := lockAsync(t, ctx, b, name, "b")
	awaitHeld(t, held, "no read was held behind b's create")
	select {
	case <-created:
	case <-time.After(30 * time.Second):
		t.Fatal("b's node was not created")
	}
	chA := lockAsync(t, ctx, a, name, "a")
	ra := awaitLock(t, chA, 20*time.Second, "a's Lock once b's session expired")
	if ra.err != nil {
		t.Fatal(ra.err)
	}
	mu.Lock()
	stage = 3
	mu.Unlock()
	once.Do(func() { close(release) })

	// b requeues in a new session, behind a.
	lockEventually(t, 20*time.Second, "b queued again behind a", func() bool { return len(lockNodes(t, conn, parent)) == 2 })
	select {
	case rb := <-chB:
		t.Fatalf("b's Lock returned (%v, %v) while a holds", rb.l, rb.err)
	default:
	}
	if isClosed(ra.l.Lost()) {
		t.Fatal("a's hold was lost; the test proves nothing")
	}
	if err := ra.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	rb := awaitLock(t, chB, 20*time.Second, "b's Lock once a unlocked")
	if rb.err != nil {
		t.Fatal(rb.err)
	}
	if b.conn.SessionID() == oldSID {
		t.Errorf("b's session did not change (%#x)", oldSID)
	}
	if czxid := nodeCzxid(t, conn, parent); rb.l.Fence() != czxid || rb.l.Fence() <= ra.l.Fence() {
		t.Errorf("b's fence %d, want its node's czxid %d, above a's %d", rb.l.Fence(), czxid, ra.l.Fence())
	}
	mu.Lock()
	t.Logf("held request: opcode %d; requests b wrote once released: %v", heldOp, after)
	mu.Unlock()
	if err := rb.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testLockCreateNeverWritten: the create is held before the wire while
// the store closes, so it is never written: the Lock call returns
// ErrClosed at once, Close returns once the create is let go, and neither
// a watch for the create's frame nor a goroutine is left.
func testLockCreateNeverWritten(t *testing.T, addr string) {
	const name = "neverwritten"
	defer leakcheck.VerifyNone(t, goleak.IgnoreCurrent())
	var w wire
	s, err := open(testOptions(addr, nil), w.wrap)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	held, release := make(chan struct{}), make(chan struct{})
	var armed atomic.Bool
	armed.Store(true)
	w.setFail(func(op int32) bool {
		if op == opLockCreate && armed.CompareAndSwap(true, false) {
			close(held)
			<-release
			return true // closes the connection before the frame is written
		}
		return false
	})
	ch := lockAsync(t, ctx, s, name, "o")
	awaitHeld(t, held, "no create was sent")
	if n := s.wire.writes.pending.Load(); n != 1 {
		t.Errorf("%d create watches while the create is on its way, want 1", n)
	}
	closeWhileHeld(t, s, ch, release, "Lock whose store closes before its create is written")
}
