package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/leakcheck"
	"github.com/cosid-go/store/internal/testing/poll"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// go-zookeeper's opcodes the lock tests count, besides those of main_test.go.
const (
	opcodeDelete    = 2
	opcodeExists    = 3
	opcodeChildren2 = 12 // Children sends getChildren2

	// A lock node's create is a multi with a setData of its parent
	// (lock_create.go); so are the liveness rule's confirmations, which a
	// store sends only while it holds a lock.
	opLockCreate = opMulti
)

func TestLockNodeNames(t *testing.T) {
	guid := strings.Repeat("0f", 16)
	for _, c := range []struct {
		name string
		seq  int32
		ok   bool
	}{
		{"_c_" + guid + "-lock-0000000007", 7, true},
		{"_c_" + guid + "-lock-2147483647", math.MaxInt32, true},
		{"_c_" + guid + "-lock--2147483648", math.MinInt32, true}, // after the counter wrapped
		{"_c_" + guid + "-lock--000000005", -5, true},
		{"_c_" + guid + "-lock-", 0, false},
		{"_c_" + guid + "-lock-x1", 0, false},
		{"_c_" + guid + "-lock-2147483648", 0, false}, // not a 32-bit sequence
		{"_c_" + guid[:30] + "-lock-0000000001", 0, false},
		{"lock-0000000001", 0, false},
		{"_c_" + guid + "__lock__0000000001", 0, false},
	} {
		g, seq, ok := parseLockNode(c.name)
		if ok != c.ok || seq != c.seq || (ok && g != guid) {
			t.Errorf("parseLockNode(%q) = (%q, %d, %v), want (%q, %d, %v)", c.name, g, seq, ok, guid, c.seq, c.ok)
		}
	}
	for _, c := range []struct {
		a, b int32
		want bool
	}{
		{5, 7, true},
		{7, 5, false},
		{7, 7, false},
		{math.MaxInt32, math.MinInt32, true}, // the counter wrapped between a and b
		{math.MinInt32, math.MaxInt32, false},
		{-1, 0, true},
		{math.MaxInt32 - 2, math.MinInt32 + 2, true},
	} {
		if got := seqCompare(c.a, c.b) < 0; got != c.want {
			t.Errorf("seqCompare(%d, %d) < 0 is %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestLocks runs the lock checks that need a server, once per supported
// ZooKeeper version, each with a root of its own.
func TestLocks(t *testing.T) {
	onEachVersion(t, func(_ *zktest.Server) []serverCheck {
		return []serverCheck{
			{"RequestsUncontended", testLockRequestsUncontended},
			{"ParentNotWritable", testLockParentNotWritable},
			{"FenceFirstNotAlone", testLockFenceFirstNotAlone},
			{"NoHerd", testLockNoHerd},
			{"Exclusion", testLockExclusion},
			{"PredecessorGoneBeforeWatch", testLockPredecessorGone},
			{"CutDuringCreate", testLockCutDuringCreate},
			{"CutDuringCreateThenGiveUp", testLockCutThenGiveUp},
			{"CancelDuringCreate", testLockCancelDuringCreate},
			{"SessionExpiry", testLockSessionExpiry},
			{"SilentServer", testLockSilentServer},
			{"ShortDisconnect", testLockShortDisconnect},
			{"SessionEvents", testLockSessionEvents},
			{"CallerConnection", testLockCallerConnection},
			{"CallerConnectionCut", testLockCallerConnectionCut},
			{"NoGoroutineLeft", testLockNoGoroutineLeft},
		}
	})
}

// lockOnce locks name on s and unlocks it (which makes the lock's
// parents), and returns the fence it had.
func lockOnce(t *testing.T, s *driverStore, name, owner string) int64 {
	t.Helper()
	ctx := t.Context()
	l, err := s.Lock(ctx, name, owner, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	return l.Fence()
}

// lockNodes lists a lock's nodes through conn, sorted; none if the parent
// is missing.
func lockNodes(t *testing.T, conn *zk.Conn, parent string) []string {
	t.Helper()
	var kids []string
	var failed error
	// A loaded machine can cost conn its link for a while (CI saw "zk:
	// connection closed"): the read is tried again until it is answered.
	poll.Succeeds(t, 30*time.Second, "Children("+parent+")", func() error {
		var err error
		kids, _, err = conn.Children(parent)
		switch {
		case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrNoServer), errors.Is(err, zk.ErrSessionExpired):
			return err
		case errors.Is(err, zk.ErrNoNode):
			kids = nil
		case err != nil:
			failed = err
		}
		return nil
	})
	if failed != nil {
		t.Fatalf("Children(%s): %v", parent, failed)
	}
	sort.Strings(kids)
	return kids
}

// queueLength is the number of nodes of a lock, as the store lists them.
func queueLength(ctx context.Context, s *driverStore, name string) int {
	ws, err := s.Waiters(ctx, name)
	if err != nil {
		return -1
	}
	return len(ws)
}

func lockedCount(s *driverStore) int {
	s.sess.mu.Lock()
	defer s.sess.mu.Unlock()
	return len(s.sess.nodes)
}

// testLockRequestsUncontended: an uncontended Lock and Unlock send three
// requests in two round trips, one round trip fewer than go-zookeeper's
// zk.Lock (create; list; delete): the create, a multi whose setData gives
// the fence (the node's czxid), with the listing sent right behind it;
// then the delete (lock_create.go). Every answer is held back 300ms, so a
// listing sent only after the create's answer would be a trip of its own.
func testLockRequestsUncontended(t *testing.T, addr string) {
	lockUnlock := countedLock(t, addr, "requests", zk.WorldACL(zk.PermAll))
	for i := range 3 {
		trips, requests := lockUnlock(i)
		wantTrips(t, fmt.Sprintf("lock %d", i), trips, requests, 2,
			map[string]int{"all": 3, "multi": 1, "op12": 1, "op2": 1})
	}
}

// testLockParentNotWritable: a lock whose parent's ACL does not let the
// store write it (only create, read, delete) still works: the create's
// multi is refused as a whole, and the store falls back to a plain create
// and reads the fence, the node's czxid, with its first listing, in the
// plain recipe's round trips.
func testLockParentNotWritable(t *testing.T, addr string) {
	lockUnlock := countedLock(t, addr, "notwritable", zk.WorldACL(zk.PermCreate|zk.PermRead|zk.PermDelete))
	// The refused multi (and the listing behind it), then create; list and
	// stat; delete. The create may leave before the listing's answer is
	// back, sharing its round trip.
	trips, requests := lockUnlock(0)
	if trips < 3 || trips > 4 {
		t.Errorf("first lock took %d round trips, want 3 or 4 (requests %v)", trips, requests)
	}
	// The plain create is a multi too, of the create and the check of
	// the locks' seal (lock_seal.go).
	wantRequests(t, "first lock", requests,
		map[string]int{"all": 6, "multi": 2, "op12": 2, "op3": 1, "op2": 1})
	trips, requests = lockUnlock(1)
	wantTrips(t, "later lock", trips, requests, 3,
		map[string]int{"all": 4, "multi": 1, "op12": 1, "op3": 1, "op2": 1})
}

// countedLock opens a store whose round trips are counted (every answer
// held back 300ms) and makes name's parent with acl, kept by a child that
// is not a lock node, so the server never deletes it as an unused
// container while requests are counted. The function it returns locks
// name, checks that the fence is the lock node's czxid, unlocks, and
// returns the round trips and requests of lock and unlock.
func countedLock(t *testing.T, addr, name string, acl []zk.ACL) func(i int) (int, map[string]int) {
	r := &slotRounds{lag: slotLag}
	// A long session timeout: no confirmation is due while a lock is held.
	s, err := open(testOptions(addr, map[string]string{"sessionTimeout": "30s"}), r.wrap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	conn := rawConn(t, addr)
	parent := s.lockParent(name)
	keepLockParent(t, conn, parent, acl)
	return func(i int) (int, map[string]int) {
		ctx := t.Context()
		before := r.snapshot()
		l, err := s.Lock(ctx, name, "o", true)
		if err != nil {
			t.Fatalf("lock %d: %v", i, err)
		}
		nodes := slices.DeleteFunc(lockNodes(t, conn, parent), func(k string) bool { return k == "keep" })
		if len(nodes) != 1 {
			t.Fatalf("lock nodes: %q, want one", nodes)
		}
		_, stat, err := conn.Get(parent + "/" + nodes[0])
		if err != nil {
			t.Fatal(err)
		}
		if l.Fence() != stat.Czxid {
			t.Errorf("lock %d: fence %d, want the node's czxid %d", i, l.Fence(), stat.Czxid)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		return r.since(before)
	}
}

// keepLockParent creates a lock's parent (a plain node with acl) and a
// child that is not a lock node, so that the server never deletes the
// parent as an unused container while a test holds or counts requests.
func keepLockParent(t *testing.T, conn *zk.Conn, parent string, acl []zk.ACL) {
	t.Helper()
	dir := parent[:strings.LastIndex(parent, "/")]
	for _, p := range []string{dir[:strings.LastIndex(dir, "/")], dir} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	if _, err := conn.Create(parent, nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(parent+"/keep", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}

// testLockFenceFirstNotAlone: a node that is first with another queued
// behind it by the time it lists the children holds with its own czxid as
// the fence (not, say, the parent's pzxid), and the next holder's is above.
func testLockFenceFirstNotAlone(t *testing.T, addr string) {
	const name = "notalone"
	opts := testOptions(addr, nil)
	var w wire
	a := openTest(t, opts, &w)
	b := openTest(t, opts, nil)
	conn := rawConn(t, addr)
	ctx := t.Context()
	// A parent that stays while the test holds a's requests.
	keepLockParent(t, conn, a.lockParent(name), zk.WorldACL(zk.PermAll))
	nodes := func() int {
		return len(slices.DeleteFunc(lockNodes(t, conn, a.lockParent(name)), func(k string) bool { return k == "keep" }))
	}
	stats := w.requests(opcodeExists)
	held, release := w.holdFirst(opcodeChildren2)
	chA := lockAsync(t, ctx, a, name, "a")
	awaitHeld(t, held, "a sent no listing")
	// The listing leaves right behind the create (lock_create.go): b's
	// create is sent once the server has a's node, so that b queues behind.
	lockEventually(t, 10*time.Second, "a's node created", func() bool { return nodes() == 1 })
	chB := lockAsync(t, ctx, b, name, "b")
	lockEventually(t, 10*time.Second, "b queued", func() bool { return nodes() == 2 })
	close(release)
	ra := awaitLock(t, chA, 10*time.Second, "Lock by a")
	if ra.err != nil {
		t.Fatal(ra.err)
	}
	if c := w.requests(opcodeExists) - stats; c != 0 {
		t.Errorf("a read its node's Stat %d times, want 0 (the fence comes with the create's answer)", c)
	}
	ws, err := b.Waiters(ctx, name)
	if err != nil || len(ws) != 2 || ws[0].Fence != ra.l.Fence() {
		t.Errorf("a holds with fence %d; Waiters = (%+v, %v), want a's czxid first", ra.l.Fence(), ws, err)
	}
	if err := ra.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	rb := awaitLock(t, chB, 10*time.Second, "Lock by b")
	if rb.err != nil {
		t.Fatal(rb.err)
	}
	if rb.l.Fence() <= ra.l.Fence() {
		t.Errorf("fence %d of b is not above a's %d", rb.l.Fence(), ra.l.Fence())
	}
	if err := rb.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testLockNoHerd: 16 waiters queue behind a holder, each in a store of its
// own whose requests are counted. Each release wakes exactly one waiter:
// over the whole run every waiter lists the children exactly twice (on
// arrival and when its predecessor leaves) and sets exactly one watch, and
// the lock passes in arrival order.
func testLockNoHerd(t *testing.T, addr string) {
	const name, n = "herd", 16
	// Sessions are not the subject: 20s ones survive a loaded machine,
	// where a lost one would change the arrival order.
	opts := testOptions(addr, map[string]string{"sessionTimeout": "20s"})
	ctx := t.Context()
	holder := openTest(t, opts, nil)
	checker := openTest(t, opts, nil)
	h, err := holder.Lock(ctx, name, "holder", true)
	if err != nil {
		t.Fatal(err)
	}
	type acquired struct {
		i int
		lockResult
	}
	got := make(chan acquired, n)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after the stores close, which ends any wait
	wires := make([]*wire, n)
	for i := range n {
		wires[i] = &wire{}
		st := openTest(t, opts, wires[i])
		wg.Go(func() {
			l, err := st.Lock(ctx, name, fmt.Sprintf("w%02d", i), true)
			got <- acquired{i, lockResult{l: l, err: err}}
		})
		// One at a time, so the arrival order is known.
		// Each waiter opens a store first: at load 30 that took over 10s.
		lockEventually(t, 60*time.Second, fmt.Sprintf("waiter %d queued", i), func() bool {
			return queueLength(ctx, checker, name) == i+2
		})
	}
	lockEventually(t, 60*time.Second, "every waiter watching", func() bool {
		for _, w := range wires {
			if w.requests(opGetData) == 0 {
				return false
			}
		}
		return true
	})
	for i, w := range wires {
		if c := w.requests(opcodeChildren2); c != 1 {
			t.Errorf("waiter %d listed the children %d times before any release, want 1", i, c)
		}
	}
	prev := h
	for k := range n {
		if err := prev.Unlock(ctx); err != nil {
			t.Fatalf("Unlock of holder %d: %v", k, err)
		}
		var a acquired
		select {
		case a = <-got:
		case <-time.After(30 * time.Second):
			t.Fatalf("release %d: nobody got the lock within 30s", k)
		}
		if a.err != nil {
			t.Fatalf("waiter %d: Lock: %v", a.i, a.err)
		}
		if a.i != k {
			t.Errorf("release %d passed the lock to waiter %d, want %d (arrival order)", k, a.i, k)
		}
		if ws, err := checker.Waiters(ctx, name); err != nil || len(ws) == 0 || ws[0].Fence != a.l.Fence() {
			t.Errorf("waiter %d holds with fence %d; Waiters = (%+v, %v), want its node's czxid first", a.i, a.l.Fence(), ws, err)
		}
		prev = a.l
	}
	if err := prev.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	want := map[int32]int{opcodeChildren2: 2, opcodeExists: 0, opGetData: 1, opcodeDelete: 1}
	total, children := 0, 0
	for i, w := range wires {
		for op, c := range want {
			if got := w.requests(op); got != c {
				t.Errorf("waiter %d sent %d requests of opcode %d, want %d", i, got, op, c)
			}
		}
		// Besides its create, a store's multis are the liveness rule's
		// confirming writes while it holds a lock (lock_confirm.go),
		// sent by its loop, not by the queue: a waiter granted a while
		// after its create confirms its session so.
		if got := w.requests(-1) - w.requests(opMulti); got != 4 {
			t.Errorf("waiter %d sent %d requests besides multis, want 4 (list, watch, list, delete)", i, got)
		}
		if got := w.requests(opMulti) - 1; got < 0 || got > 2 {
			t.Errorf("waiter %d sent %d multis besides its create while holding the lock briefly, want at most 2", i, got)
		}
		total += w.requests(-1)
		children += w.requests(opcodeChildren2)
	}
	t.Logf("%d waiters: %d requests in all, %d children listings (%d on arrival, %d on %d releases)",
		n, total, children, n, children-n, n)
}

// testLockExclusion: goroutines of several stores increment a counter
// under the lock. A checker records each critical section (enter and exit
// times, fence) and counts overlaps: there must be none, no increment may
// be lost, fences must grow with each holder, and no Lost may close.
func testLockExclusion(t *testing.T, addr string) {
	const stores, workers, rounds, name = 4, 6, 15, "exclusion"
	opts := testOptions(addr, nil)
	ctx := t.Context()
	type section struct {
		fence      int64
		enter, out time.Time
	}
	var (
		inside   atomic.Int32
		overlaps atomic.Int32
		lost     atomic.Int32
		counter  atomic.Int64 // read and written in two steps: an overlap loses updates
		mu       sync.Mutex
		sections []section
		wg       sync.WaitGroup
	)
	for i := range stores {
		st := portable(t, openTest(t, opts, nil))
		for range workers {
			wg.Go(func() {
				for range rounds {
					l, err := st.Locks().Lock(ctx, name)
					if err != nil {
						t.Errorf("store %d: Lock: %v", i, err)
						return
					}
					sec := section{fence: l.Fence(), enter: time.Now()}
					if inside.Add(1) != 1 {
						overlaps.Add(1)
					}
					v := counter.Load()
					for range 3 {
						runtime.Gosched() // let an overlapping holder run here
					}
					counter.Store(v + 1)
					select {
					case <-l.Lost():
						lost.Add(1)
					default:
					}
					inside.Add(-1)
					sec.out = time.Now()
					mu.Lock()
					sections = append(sections, sec)
					mu.Unlock()
					if err := l.Unlock(ctx); err != nil {
						t.Errorf("store %d: Unlock: %v", i, err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	if n := overlaps.Load(); n > 0 {
		t.Errorf("%d critical sections overlapped", n)
	}
	if n := lost.Load(); n > 0 {
		t.Errorf("Lost closed in %d critical sections", n)
	}
	if got, want := counter.Load(), int64(stores*workers*rounds); got != want {
		t.Errorf("counter = %d after %d increments under the lock", got, want)
	}
	sort.Slice(sections, func(i, j int) bool { return sections[i].enter.Before(sections[j].enter) })
	for i := 1; i < len(sections); i++ {
		p, c := sections[i-1], sections[i]
		if c.enter.Before(p.out) {
			t.Errorf("section %d (fence %d) entered before section %d (fence %d) left", i, c.fence, i-1, p.fence)
		}
		if c.fence <= p.fence {
			t.Errorf("section %d has fence %d, not above the previous holder's %d", i, c.fence, p.fence)
		}
	}
}

// testLockPredecessorGone: the predecessor leaves after the waiter listed
// the children but before its watch reaches the server. The watch request
// finds no node, and the waiter must look again at once (a watch set on a
// vanished node would never fire).
func testLockPredecessorGone(t *testing.T, addr string) {
	const name = "vanished"
	opts := testOptions(addr, nil)
	ctx := t.Context()
	var w wire
	a := openTest(t, opts, nil)
	b := openTest(t, opts, &w)
	la, err := a.Lock(ctx, name, "a", true)
	if err != nil {
		t.Fatal(err)
	}
	held, release := w.holdFirst(opGetData)
	ch := lockAsync(t, ctx, b, name, "b")
	awaitHeld(t, held, "the waiter sent no watch request")
	if err := la.Unlock(ctx); err != nil {
		close(release)
		t.Fatal(err)
	}
	close(release)
	r := awaitLock(t, ch, 5*time.Second, "Lock whose predecessor left before its watch was set")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if c := w.requests(opcodeChildren2); c != 2 {
		t.Errorf("the waiter listed the children %d times, want 2 (again at once after the watch found no node)", c)
	}
	if err := r.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testLockCutDuringCreate: the connection drops right after the create is
// sent, so its answer is lost. The store finds its node by GUID once
// reconnected (same session) and uses it, or creates again; either way it
// holds the lock with one node, whose czxid is the fence, and Unlock leaves
// nothing behind.
func testLockCutDuringCreate(t *testing.T, addr string) {
	const name = "cut"
	s, w, conn, parent, _ := steeredLock(t, addr, name)
	ctx := t.Context()
	sid := s.conn.SessionID()
	creates := w.requests(opLockCreate)
	sent := w.dropFirstAnswer(opLockCreate)
	long, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	l, err := s.Lock(long, name, "o", true)
	if err != nil {
		t.Fatalf("Lock across a lost create answer: %v", err)
	}
	if !sent() {
		t.Fatal("no create was sent")
	}
	if s.conn.SessionID() != sid {
		t.Fatalf("the session changed (%#x to %#x); the test proves nothing", sid, s.conn.SessionID())
	}
	nodes := lockNodes(t, conn, parent)
	if len(nodes) != 1 {
		t.Fatalf("nodes after the lost create: %q, want exactly the holder's", nodes)
	}
	_, stat, err := conn.Get(parent + "/" + nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	if stat.Czxid != l.Fence() {
		t.Errorf("fence %d, want the node's czxid %d", l.Fence(), stat.Czxid)
	}
	// One create: the lost one was applied and found by GUID. Two: it was
	// not applied, or it was found only after a second create (a twin,
	// removed).
	t.Logf("creates sent: %d", w.requests(opLockCreate)-creates)
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if nodes := lockNodes(t, conn, parent); len(nodes) != 0 {
		t.Errorf("nodes after Unlock: %q", nodes)
	}
}

// testLockCutThenGiveUp: the create's answer is lost and the Lock call's
// context ends before the connection is back. Once the client recovers,
// the node it may have created is found by GUID and removed: no orphan.
func testLockCutThenGiveUp(t *testing.T, addr string) {
	const name = "giveup"
	opts := testOptions(addr, nil)
	var w wire
	s := openTest(t, opts, &w)
	holder := openTest(t, opts, nil)
	conn := rawConn(t, addr)
	ctx := t.Context()
	parent := s.lockParent(name)
	h, err := holder.Lock(ctx, name, "holder", true)
	if err != nil {
		t.Fatal(err)
	}
	before := lockNodes(t, conn, parent)
	w.dropFirstAnswer(opLockCreate)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = s.Lock(short, name, "o", true)
	wantIs(t, err, context.DeadlineExceeded, "Lock whose create answer was lost and whose context ended")
	lockEventually(t, 20*time.Second, "the store forgets its node", func() bool { return lockedCount(s) == 0 })
	if nodes := lockNodes(t, conn, parent); !slices.Equal(nodes, before) {
		t.Errorf("nodes once recovered: %q, want only the holder's %q", nodes, before)
	}
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testLockCancelDuringCreate: the create is held in flight until the Lock
// call's context is cancelled, then released and applied. The call must
// remove the node before it returns.
func testLockCancelDuringCreate(t *testing.T, addr string) {
	const name = "cancelled"
	s, w, conn, parent, _ := steeredLock(t, addr, name)
	ctx := t.Context()
	held, release := w.holdFirst(opLockCreate)
	cctx, cancel := context.WithCancel(ctx)
	ch := lockAsync(t, cctx, s, name, "o")
	awaitHeld(t, held, "no create was sent")
	cancel()
	close(release)
	r := awaitLock(t, ch, 5*time.Second, "Lock cancelled with its create in flight")
	wantIs(t, r.err, context.Canceled, "Lock cancelled with its create in flight")
	if nodes := lockNodes(t, conn, parent); len(nodes) != 0 {
		t.Errorf("nodes right after the cancelled Lock returned: %q, want none", nodes)
	}
}

// watchHolderNode watches the only node under parent, the holder's: the
// event comes when the server removes it, as it does when the holder's
// session expires.
func watchHolderNode(t *testing.T, conn *zk.Conn, parent string) <-chan zk.Event {
	t.Helper()
	nodes := lockNodes(t, conn, parent)
	if len(nodes) != 1 {
		t.Fatalf("nodes: %q, want the holder's", nodes)
	}
	_, _, deleted, err := conn.ExistsW(parent + "/" + nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	return deleted
}

// testLockSessionExpiry: the holder's connection is cut (through a proxy)
// for longer than its 2s session timeout. Lost must close within the
// session timeout of the cut, and before the server expires the session
// and a waiter in another store gets the lock. Unlock then reports the
// loss, and once reconnected (with a new session) the store locks again
// and leaves nothing behind.
func testLockSessionExpiry(t *testing.T, addr string) {
	const name = "expiry"
	proxy := zktest.NewProxy(t, addr)
	opts := testOptions(proxy.Addr(), map[string]string{"sessionTimeout": "2s"})
	s := openTest(t, opts, nil)
	other := openTest(t, testOptions(addr, map[string]string{"root": opts["root"]}), nil)
	conn := rawConn(t, addr)
	ctx := t.Context()
	parent := s.lockParent(name)
	l, err := s.Lock(ctx, name, "a", true)
	if err != nil {
		t.Fatal(err)
	}
	timeout := s.sessionTimeout()
	if timeout != 2*time.Second {
		t.Errorf("negotiated session timeout read as %v, want 2s", timeout)
	}
	deleted := watchHolderNode(t, conn, parent)
	chB := lockAsync(t, ctx, other, name, "b")
	lockEventually(t, 10*time.Second, "b queued", func() bool { return queueLength(ctx, other, name) == 2 })
	oldSID := s.conn.SessionID()

	cut := time.Now()
	proxy.Cut()
	var lostAfter, deletedAfter time.Duration
	select {
	case <-l.Lost():
		lostAfter = time.Since(cut)
	case <-time.After(4 * timeout):
		t.Fatalf("Lost not closed within %v of the cut", 4*timeout)
	}
	if lostAfter > timeout {
		t.Errorf("Lost closed %v after the cut, more than the session timeout %v", lostAfter, timeout)
	}
	select {
	case ev := <-deleted:
		deletedAfter = time.Since(cut)
		if ev.Type != zk.EventNodeDeleted {
			t.Fatalf("watch on the holder's node: %+v, want its deletion", ev)
		}
	case <-time.After(10 * timeout):
		t.Fatal("the server did not expire the cut session")
	}
	t.Logf("Lost closed %v after the cut; the server expired the session %v after it", lostAfter, deletedAfter)
	if deletedAfter <= lostAfter {
		t.Errorf("the server removed the holder's node %v after the cut, before Lost closed (%v)", deletedAfter, lostAfter)
	}
	rb := awaitLock(t, chB, 10*time.Second, "Lock by the waiter after the holder's session expired")
	if rb.err != nil {
		t.Fatal(rb.err)
	}
	if rb.l.Fence() <= l.Fence() {
		t.Errorf("fence %d of the next holder is not above the lost holder's %d", rb.l.Fence(), l.Fence())
	}
	wantIs(t, l.Unlock(ctx), driver.ErrLeaseLost, "Unlock of a lock lost with its session")
	if err := l.Unlock(ctx); err != nil {
		t.Errorf("second Unlock of a lost lock: %v", err)
	}

	proxy.Restore()
	lockEventually(t, 30*time.Second, "a new session", func() bool {
		return zk.State(s.state.Load()) == zk.StateHasSession && s.conn.SessionID() != oldSID
	})
	if err := rb.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	long, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	l2, err := s.Lock(long, name, "a", true)
	if err != nil {
		t.Fatalf("Lock after the session expired: %v", err)
	}
	if l2.Fence() <= rb.l.Fence() {
		t.Errorf("fence %d after recovery, not above %d", l2.Fence(), rb.l.Fence())
	}
	if err := l2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if nodes := lockNodes(t, conn, parent); len(nodes) != 0 {
		t.Errorf("nodes at the end: %q", nodes)
	}
	if n := lockedCount(s); n != 0 {
		t.Errorf("the store still tracks %d lock nodes", n)
	}
}

// testLockSilentServer: the server goes silent (a proxy stops forwarding
// but keeps the sockets open), so go-zookeeper notices only after two
// thirds of the session timeout. Lost must still close within the session
// timeout of the silence, and before the server expires the session; a
// timer started at the disconnect event would be late.
func testLockSilentServer(t *testing.T, addr string) {
	const name = "silent"
	proxy := zktest.NewProxy(t, addr)
	opts := testOptions(proxy.Addr(), map[string]string{"sessionTimeout": "2s"})
	s := openTest(t, opts, nil)
	conn := rawConn(t, addr)
	ctx := t.Context()
	l, err := s.Lock(ctx, name, "a", true)
	if err != nil {
		t.Fatal(err)
	}
	timeout := s.sessionTimeout()
	deleted := watchHolderNode(t, conn, s.lockParent(name))
	silent := time.Now()
	proxy.Freeze()
	var lostAfter, noticedAfter time.Duration
	lockEventually(t, 4*timeout, "Lost closed and the silence noticed", func() bool {
		if lostAfter == 0 {
			select {
			case <-l.Lost():
				lostAfter = time.Since(silent)
			default:
			}
		}
		if noticedAfter == 0 && zk.State(s.state.Load()) != zk.StateHasSession {
			noticedAfter = time.Since(silent)
		}
		return lostAfter > 0 && noticedAfter > 0
	})
	select {
	case <-deleted:
	case <-time.After(10 * timeout):
		t.Fatal("the server did not expire the silent session")
	}
	deletedAfter := time.Since(silent)
	t.Logf("after the silence began: go-zookeeper noticed it at %v, Lost closed at %v, the server expired the session at %v",
		noticedAfter, lostAfter, deletedAfter)
	if lostAfter > timeout {
		t.Errorf("Lost closed %v after the silence began, more than the session timeout %v", lostAfter, timeout)
	}
	if deletedAfter <= lostAfter {
		t.Errorf("the server removed the holder's node %v after the silence began, before Lost closed (%v)", deletedAfter, lostAfter)
	}
	wantIs(t, l.Unlock(ctx), driver.ErrLeaseLost, "Unlock after the session expired")
	proxy.Thaw()
}

// testLockShortDisconnect: a disconnect much shorter than the session
// timeout keeps the session and the lock: Lost stays open.
func testLockShortDisconnect(t *testing.T, addr string) {
	const name = "blip"
	proxy := zktest.NewProxy(t, addr)
	s := openTest(t, testOptions(proxy.Addr(), map[string]string{"sessionTimeout": "6s"}), nil)
	ctx := t.Context()
	l, err := s.Lock(ctx, name, "a", true)
	if err != nil {
		t.Fatal(err)
	}
	sid := s.conn.SessionID()
	proxy.Cut()
	lockEventually(t, 10*time.Second, "the disconnect noticed", func() bool {
		return zk.State(s.state.Load()) != zk.StateHasSession
	})
	proxy.Restore()
	lockEventually(t, 10*time.Second, "reconnected", func() bool {
		return zk.State(s.state.Load()) == zk.StateHasSession
	})
	if s.conn.SessionID() != sid {
		t.Fatalf("the session changed; the test proves nothing")
	}
	select {
	case <-l.Lost():
		t.Errorf("Lost closed after a disconnect shorter than the session timeout")
	default:
	}
	if err := l.Unlock(ctx); err != nil {
		t.Errorf("Unlock after a short disconnect: %v", err)
	}
}

// testLockSessionEvents: the session tracking itself, fed by hand. A new
// session ID, or an expiry, loses the holds of the old session at once.
func testLockSessionEvents(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	ctx := t.Context()
	sid := s.conn.SessionID()
	l, err := s.Lock(ctx, "events-1", "a", true)
	if err != nil {
		t.Fatal(err)
	}
	s.observeSession(true, sid+1, false) // as if the session had been replaced
	select {
	case <-l.Lost():
	default:
		t.Fatal("Lost not closed by a session change")
	}
	wantIs(t, l.Unlock(ctx), driver.ErrLeaseLost, "Unlock after a session change")
	s.observeSession(true, sid, false) // back to the truth

	l, err = s.Lock(ctx, "events-2", "a", true)
	if err != nil {
		t.Fatal(err)
	}
	s.observeSession(false, 0, true)
	select {
	case <-l.Lost():
	default:
		t.Fatal("Lost not closed by an expiry")
	}
	wantIs(t, l.Unlock(ctx), driver.ErrLeaseLost, "Unlock after an expiry")
	s.observeSession(true, sid, false)

	// A hold that may have twins (a create whose answer was lost) is not
	// known dead when its session ends: a removal sweeps the twins and
	// forgets it, rather than its record staying until Close.
	for i, end := range []func(){
		func() { s.observeSession(true, sid+1, false) },
		func() { s.observeSession(false, 0, true) },
	} {
		name := fmt.Sprintf("events-twins-%d", i)
		l, err := s.Lock(ctx, name, "a", true)
		if err != nil {
			t.Fatal(err)
		}
		s.sess.mu.Lock()
		l.(*lockHold).n.twins = true
		s.sess.mu.Unlock()
		end()
		select {
		case <-l.Lost():
		default:
			t.Fatalf("%s: Lost not closed by the end of the session", name)
		}
		lockEventually(t, 10*time.Second, name+": the lost hold forgotten", func() bool { return lockedCount(s) == 0 })
		wantIs(t, l.Unlock(ctx), driver.ErrLeaseLost, "Unlock after the session ended")
		s.observeSession(true, sid, false)
	}
}

// testLockCallerConnection: a store on a caller's connection removes its
// nodes when it closes (the session lives on): its hold is lost, its
// waiter ends with ErrClosed, and a waiter in another store gets the lock.
func testLockCallerConnection(t *testing.T, addr string) {
	const name = "caller"
	conn := rawConn(t, addr)
	root := randomRoot()
	c, err := newOnConn(conn, map[string]string{"root": root, "sessionTimeout": "4s"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	other := openTest(t, testOptions(addr, map[string]string{"root": root}), nil)
	ctx := t.Context()
	l, err := c.Lock(ctx, name, "c", true)
	if err != nil {
		t.Fatal(err)
	}
	chC := lockAsync(t, ctx, c, name, "c2")
	lockEventually(t, 10*time.Second, "c2 queued", func() bool { return queueLength(ctx, other, name) == 2 })
	chO := lockAsync(t, ctx, other, name, "o")
	lockEventually(t, 10*time.Second, "o queued", func() bool { return queueLength(ctx, other, name) == 3 })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Lost():
	default:
		t.Error("Lost not closed by Close")
	}
	rc := awaitLock(t, chC, 5*time.Second, "Lock waiting while its store closed")
	wantIs(t, rc.err, driver.ErrClosed, "Lock waiting while its store closed")
	ro := awaitLock(t, chO, 5*time.Second, "Lock by the other store's waiter")
	if ro.err != nil {
		t.Fatal(ro.err)
	}
	if st := conn.State(); st != zk.StateHasSession {
		t.Errorf("the caller's connection is in state %v after the store closed", st)
	}
	ws, err := other.Waiters(ctx, name)
	if err != nil || len(ws) != 1 || ws[0].Owner != "o" {
		t.Errorf("Waiters after the caller's store closed = (%+v, %v), want only o", ws, err)
	}
	if err := ro.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testLockCallerConnectionCut: a store on a caller's connection, told the
// session timeout, loses its holds once no request through the leader
// confirms the session for that long (less a margin); once the connection is
// back in the same session, the lost hold's node is removed. Without the
// session timeout it refuses to lock.
func testLockCallerConnectionCut(t *testing.T, addr string) {
	const name = "callercut"
	proxy := zktest.NewProxy(t, addr)
	conn := rawConn(t, proxy.Addr())
	direct := rawConn(t, addr)
	c, err := newOnConn(conn, map[string]string{"root": randomRoot(), "sessionTimeout": "4s"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	l, err := c.Lock(ctx, name, "c", true)
	if err != nil {
		t.Fatal(err)
	}
	sid := conn.SessionID()
	proxy.Cut()
	select {
	case <-l.Lost():
	case <-time.After(4 * time.Second):
		t.Fatal("Lost not closed within the session timeout (4s) of a disconnect of a caller's connection")
	}
	proxy.Restore()
	lockEventually(t, 20*time.Second, "the lost hold's node removed", func() bool {
		return len(lockNodes(t, direct, c.lockParent(name))) == 0
	})
	if conn.SessionID() != sid {
		t.Logf("the session changed (%#x to %#x): the node died with it", sid, conn.SessionID())
	}
	wantIs(t, l.Unlock(ctx), driver.ErrLeaseLost, "Unlock after a disconnect of a caller's connection")
	l2, err := c.Lock(ctx, name, "c", true)
	if err != nil {
		t.Fatalf("Lock after the connection came back: %v", err)
	}
	if err := l2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	bare, err := newOnConn(conn, map[string]string{"root": randomRoot()})
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	_, err = bare.Lock(ctx, name, "c", true)
	wantIs(t, err, driver.ErrInvalidArgument, "Lock on a store made by OpenStore without SessionTimeout")
	if err != nil && !strings.Contains(err.Error(), "Options.SessionTimeout") {
		t.Errorf("the error does not name the field Options.SessionTimeout: %v", err)
	}
}

// testLockNoGoroutineLeft: after Close nothing the locks started runs: not
// a waiter's cleanup, nor the poller of a caller's connection.
func testLockNoGoroutineLeft(t *testing.T, addr string) {
	defer leakcheck.VerifyNone(t, goleak.IgnoreCurrent())
	opts := testOptions(addr, nil)
	ctx := t.Context()
	a, err := open(opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := open(opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	la, err := a.Lock(ctx, "leak", "a", true)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := b.Lock(short, "leak", "b", true); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lock of a held lock with a short context: %v", err)
	}
	waiting := make(chan error, 1)
	go func() {
		_, err := b.Lock(ctx, "leak", "b", true)
		waiting <- err
	}()
	lockEventually(t, 10*time.Second, "b queued", func() bool { return queueLength(ctx, a, "leak") == 2 })
	b.Close()
	if err := <-waiting; !errors.Is(err, driver.ErrClosed) {
		t.Errorf("Lock waiting while its store closed: %v", err)
	}
	if err := la.Unlock(ctx); err != nil {
		t.Error(err)
	}
	a.Close()

	conn, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	c, err := newOnConn(conn, map[string]string{"root": opts["root"], "sessionTimeout": "4s"})
	if err != nil {
		t.Fatal(err)
	}
	lc, err := c.Lock(ctx, "leak", "c", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := lc.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lock(ctx, "leak", "c", true); err != nil { // held when the store closes
		t.Fatal(err)
	}
	c.Close()
	conn.Close()
}
