package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/poll"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// Tests of how a hold's deadline follows the session: the timeout each
// handshake grants, the confirmation's needs, the lock's clock; and of
// TryLock never waiting, and Close racing Lock on a caller's connection.

const opDelete = 2

// TestLockTimeoutShrinks: store A holds a lock with a 30s session; the
// server is restarted with a lower maxSessionTimeout (its data kept), so A
// reconnects in the same session now negotiated at that, which the server
// expires that long after its last activity. B waits for the lock, then
// A's network goes silent. A's Lost must close before B is granted the
// lock, in every round: A's deadline follows the new timeout, not the 30s
// it had. With 4s, A's hold is past its new deadline at the reconnect
// already; with 12s, the server is stopped right after a confirmation, so
// A's hold outlives the reconnect and its deadline is moved earlier.
func TestLockTimeoutShrinks(t *testing.T) {
	zktest.EachVersion(t, func(t *testing.T, srv *zktest.Server) {
		timeoutChangeRound(t, srv, timeoutChange{asked: 30 * time.Second, largest: 4 * time.Second, after: 4 * time.Second})
		srv.Stop()
		srv.SetSessionTimeouts(0, 0)
		srv.Start()
		timeoutChangeRound(t, srv, timeoutChange{asked: 30 * time.Second, largest: 12 * time.Second, after: 12 * time.Second, afterConfirmation: true})
	})
}

// TestLockTimeoutGrows: the other way, A's session negotiated at 8s, then
// at 20s after a restart with minSessionTimeout 20s (go-zookeeper asks
// again for the timeout it got, so only a server's minimum makes it
// grow). A's deadline moves later with it, which is safe only because the
// server counts the 20s from the reconnect: A's Lost must still close
// before B's grant.
func TestLockTimeoutGrows(t *testing.T) {
	zktest.EachVersion(t, func(t *testing.T, srv *zktest.Server) {
		timeoutChangeRound(t, srv, timeoutChange{asked: 8 * time.Second, least: 20 * time.Second, after: 20 * time.Second})
	})
}

// timeoutChange is a round of the timeout tests: A asks for a session of
// asked; the server restarts with the bounds least and largest, and A
// reconnects with a timeout of after.
type timeoutChange struct {
	asked, least, largest, after time.Duration
	afterConfirmation            bool // restart right after A's hold was confirmed
}

// timeoutChangeRound runs one round: A locks, the server restarts with
// other bounds, B waits, A's network goes silent.
func timeoutChangeRound(t *testing.T, srv *zktest.Server, c timeoutChange) {
	t.Helper()
	root := randomRoot()
	proxy := zktest.NewProxy(t, srv.Addr())
	w := &wire{}
	a := openTest(t, testOptions(proxy.Addr(), map[string]string{"root": root, "sessionTimeout": c.asked.String()}), w)
	defer a.Close()
	defer proxy.Thaw() // A's Close then reaches the server
	ctx := t.Context()
	const name = "timeout"
	la, err := a.Lock(ctx, name, "a", true)
	if err != nil {
		t.Fatalf("%v to %v: A's Lock: %v", c.asked, c.after, err)
	}
	if got := a.sessionTimeout(); got != c.asked {
		t.Fatalf("A's session timeout %v, want %v", got, c.asked)
	}
	sid := a.conn.SessionID()
	if c.afterConfirmation {
		// Right after a confirmation (a multi; every 0.3 T).
		sent := w.requests(opMulti)
		lockEventually(t, c.asked, "A confirmed its hold", func() bool { return w.requests(opMulti) > sent })
	}

	srv.Stop()
	srv.SetSessionTimeouts(c.least, c.largest)
	srv.Start()
	lockEventually(t, 30*time.Second, "A reconnected at the new timeout", func() bool {
		return a.conn.State() == zk.StateHasSession && a.sessionTimeout() == c.after
	})
	if a.conn.SessionID() != sid {
		t.Fatalf("%v to %v: A's session %#x did not survive the restart (now %#x): the round proves nothing", c.asked, c.after, sid, a.conn.SessionID())
	}
	lost := make(chan time.Duration, 1)
	go func() {
		<-la.Lost()
		lost <- monoNow() // the instant Lost closed, or later
	}()
	b := openTest(t, testOptions(srv.Addr(), map[string]string{"root": root}), nil)
	defer b.Close()
	chB := lockAsync(t, ctx, b, name, "b")
	var heldAtFreeze bool
	lockEventually(t, 20*time.Second, "B queued or granted", func() bool {
		if len(chB) > 0 {
			return true
		}
		heldAtFreeze = !isClosed(la.Lost())
		return queueLength(ctx, b, name) == 2
	})
	faultAt := monoNow()
	proxy.Freeze()
	g := awaitLock(t, chB, 2*c.after+60*time.Second, fmt.Sprintf("%v to %v: B's Lock after the freeze", c.asked, c.after))
	if g.err != nil {
		t.Fatalf("%v to %v: B's Lock: %v", c.asked, c.after, g.err)
	}
	var lostAt time.Duration
	select {
	case lostAt = <-lost:
	case <-time.After(10 * time.Second):
		t.Fatalf("%v to %v: B was granted the lock %v after the freeze and A's Lost did not close: two holders", c.asked, c.after, g.at-faultAt)
	}
	t.Logf("%v to %v: A still held when frozen: %v; A lost at %+v, B granted at %+v after the freeze: margin %v (A's cause: %v)",
		c.asked, c.after, heldAtFreeze, lostAt-faultAt, g.at-faultAt, g.at-lostAt, la.(*lockHold).LostErr())
	if lostAt >= g.at {
		t.Errorf("%v to %v: A's Lost closed at %+v, not before B was granted the lock at %+v after the freeze: two holders",
			c.asked, c.after, lostAt-faultAt, g.at-faultAt)
	}
	if err := g.l.Unlock(ctx); err != nil {
		t.Errorf("%v to %v: B's Unlock: %v", c.asked, c.after, err)
	}
}

// TestLockRootUnreadable: the root's ACL lets the store create, write,
// delete and administer, but not read. Holds must stay held over several
// session timeouts, a waiter granted later too; a hold whose own node the
// store may no longer read is lost with a cause that names the permission.
func TestLockRootUnreadable(t *testing.T) {
	onEachVersion(t, func(_ *zktest.Server) []serverCheck {
		return []serverCheck{{"RootUnreadable", testLockRootUnreadable}}
	})
}

func testLockRootUnreadable(t *testing.T, addr string) {
	// At load 30 a 2s session went unconfirmed and A's hold was lost for
	// that, not for the ACL; 5s sessions leave the scheduler room.
	const timeout = 5 * time.Second
	conn := rawConn(t, addr)
	root := randomRoot()
	// A loaded machine can cost conn its link (it failed with "zk:
	// connection closed"): the create is tried again; the root is this
	// test's own, so finding it there means an earlier try made it.
	var failed error
	poll.Succeeds(t, 30*time.Second, "Create("+root+")", func() error {
		_, err := conn.Create(root, nil, 0, zk.WorldACL(zk.PermCreate|zk.PermWrite|zk.PermDelete|zk.PermAdmin))
		switch {
		case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrNoServer), errors.Is(err, zk.ErrSessionExpired):
			return err
		case err != nil && !errors.Is(err, zk.ErrNodeExists):
			failed = err
		}
		return nil
	})
	if failed != nil {
		t.Fatalf("Create(%s): %v", root, failed)
	}
	opts := testOptions(addr, map[string]string{"root": root, "sessionTimeout": timeout.String()})
	a, b := openTest(t, opts, nil), openTest(t, opts, nil)
	ctx := t.Context()
	const name = "unreadable"
	la, err := a.Lock(ctx, name, "a", true)
	if err != nil {
		t.Fatal(err)
	}
	chB := lockAsync(t, ctx, b, name, "b")
	lockEventually(t, 10*time.Second, "B queued", func() bool { return queueLength(ctx, a, name) == 2 })
	heldFor(t, la, 3*timeout, "A")
	if err := la.Unlock(ctx); err != nil {
		t.Fatalf("A's Unlock after %v: %v", 3*timeout, err)
	}
	rb := awaitLock(t, chB, 10*time.Second, "B's Lock")
	if rb.err != nil {
		t.Fatalf("B's Lock: %v", rb.err)
	}
	heldFor(t, rb.l, 3*timeout, "B")

	// Now the store may not read its own node: the confirmations are
	// refused, and the loss says why.
	b.sess.mu.Lock()
	path := rb.l.(*lockHold).n.path
	b.sess.mu.Unlock()
	if _, err := conn.SetACL(path, zk.WorldACL(zk.PermDelete|zk.PermAdmin), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rb.l.Lost():
	case <-time.After(10 * timeout):
		t.Fatalf("B's hold not lost within %v of its node becoming unreadable", 10*timeout)
	}
	why := rb.l.(*lockHold).LostErr()
	if !errors.Is(why, zk.ErrNoAuth) || !strings.Contains(why.Error(), "read permission") {
		t.Errorf("B's hold lost with cause %v; want one naming the missing read permission (zk.ErrNoAuth)", why)
	}
	t.Logf("lost: %v", why)
	if err := rb.l.Unlock(ctx); !errors.Is(err, driver.ErrLeaseLost) || !strings.Contains(err.Error(), "read permission") {
		t.Errorf("Unlock of the lost hold: %v; want ErrLeaseLost naming the read permission", err)
	}
}

// TestLockNodeDeleted: a held lock's node deleted behind the store's back
// (by hand, or by a tool) is found by the next confirmation: the hold is
// lost, saying so.
func TestLockNodeDeleted(t *testing.T) {
	onEachVersion(t, func(_ *zktest.Server) []serverCheck {
		return []serverCheck{{"NodeDeleted", testLockNodeDeleted}}
	})
}

func testLockNodeDeleted(t *testing.T, addr string) {
	// At load 50 a 4s session went unconfirmed and the hold was lost (its
	// node gone) before the test deleted the node; 10s leaves room.
	const timeout = 10 * time.Second
	s := openTest(t, testOptions(addr, map[string]string{"sessionTimeout": timeout.String()}), nil)
	other := openTest(t, testOptions(addr, map[string]string{"root": s.root}), nil)
	ctx := t.Context()
	l, err := s.Lock(ctx, "deleted", "s", true)
	if err != nil {
		t.Fatal(err)
	}
	keep, err := s.Lock(ctx, "kept", "s", true)
	if err != nil {
		t.Fatal(err)
	}
	s.sess.mu.Lock()
	path := l.(*lockHold).n.path
	s.sess.mu.Unlock()
	if err := rawConn(t, addr).Delete(path, -1); err != nil {
		t.Fatal(err)
	}
	// Another store may take the lock at once: the hold must end within
	// a confirmation period, not a session timeout or never.
	select {
	case <-l.Lost():
	case <-time.After(timeout):
		t.Fatalf("hold whose node was deleted still not lost after %v", timeout)
	}
	if why := l.(*lockHold).LostErr(); !errors.Is(why, driver.ErrLeaseLost) || !strings.Contains(why.Error(), "deleted") {
		t.Errorf("lost with cause %v, want ErrLeaseLost saying the node was deleted", why)
	}
	heldFor(t, keep, timeout, "the other lock")
	if err := keep.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	lockOnce(t, other, "deleted", "other")
}

// heldFor checks that l stays held for d.
func heldFor(t *testing.T, l driver.Lock, d time.Duration, who string) {
	t.Helper()
	select {
	case <-l.Lost():
		t.Fatalf("%s's hold lost: %v", who, l.(*lockHold).LostErr())
	case <-time.After(d):
	}
}

// TestTryLockNeverWaits: TryLock returns within its context and without
// waiting for a session or a delete.
func TestTryLockNeverWaits(t *testing.T) {
	onEachVersion(t, func(srv *zktest.Server) []serverCheck {
		return []serverCheck{
			{"SlowDelete", testTryLockSlowDelete},
			{"Frozen", testTryLockFrozen},
			{"ServerDown", func(t *testing.T, addr string) { testTryLockServerDown(t, srv) }},
		}
	})
}

// tryLockBound is how long a TryLock that needs no server may take on a
// loaded machine. The tests below make every wait it must not do far
// longer (a held delete, retries 10s apart), so the bound checks that it
// does not wait without racing the scheduler (700ms did, at load 30).
const tryLockBound = 5 * time.Second

// testTryLockSlowDelete: the lock is held by another store, and the
// delete of the try's own node is held on the wire until TryLock has
// returned: TryLock returns ErrLocked all the same (a TryLock that waited
// for the removal would never return), and the node is removed once the
// delete goes through.
func testTryLockSlowDelete(t *testing.T, addr string) {
	w := &wire{}
	opts := testOptions(addr, nil)
	holder := openTest(t, opts, nil)
	s := openTest(t, opts, w)
	ctx := t.Context()
	const name = "try"
	l, err := holder.Lock(ctx, name, "holder", true)
	if err != nil {
		t.Fatal(err)
	}
	held, release := w.holdFirst(opDelete)
	var releaseOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { close(release) }) }
	defer letGo()
	ch := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := s.Lock(ctx, name, "try", false)
		ch <- err
	}()
	select {
	case err := <-ch:
		if !errors.Is(err, driver.ErrLocked) {
			t.Errorf("TryLock on a held lock: %v, want ErrLocked", err)
		}
		t.Logf("TryLock: %v after %v", err, time.Since(start))
	case <-time.After(20 * time.Second):
		t.Fatal("TryLock on a held lock did not return while its node's delete was held: it waits for the removal")
	}
	awaitHeld(t, held, "the try's node was not being deleted")
	letGo()
	conn := rawConn(t, addr)
	lockEventually(t, 10*time.Second, "the try's node removed", func() bool {
		return len(lockNodes(t, conn, holder.lockParent(name))) == 1
	})
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testTryLockFrozen: the network goes silent with the session still up:
// TryLock, even with a context that never ends, returns ErrUnavailable
// once the client gives the connection up (within the session timeout),
// not when the network is back.
func testTryLockFrozen(t *testing.T, addr string) {
	const timeout = 4 * time.Second
	proxy := zktest.NewProxy(t, addr)
	s := openTest(t, testOptions(proxy.Addr(), map[string]string{"sessionTimeout": timeout.String()}), nil)
	defer proxy.Thaw()
	lockOnce(t, s, "frozen", "first") // makes the parents
	proxy.Freeze()
	ch := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := s.Lock(context.Background(), "frozen", "try", false)
		ch <- err
	}()
	select {
	case err := <-ch:
		if !errors.Is(err, driver.ErrUnavailable) {
			t.Errorf("TryLock on a silent network: %v, want ErrUnavailable", err)
		}
		t.Logf("TryLock: %v after %v", err, time.Since(start))
	case <-time.After(timeout + 10*time.Second):
		t.Fatalf("TryLock on a silent network: no answer within %v", timeout+10*time.Second)
	}
}

// testTryLockServerDown: with the server down, TryLock, even with a
// context that never ends, returns ErrUnavailable at once.
func testTryLockServerDown(t *testing.T, srv *zktest.Server) {
	// A TryLock that retried would sleep 10s first; one that waited for a
	// session would wait until the server is back, after the test.
	s := openTest(t, testOptions(srv.Addr(), map[string]string{"retry.baseSleepTime": "10s", "retry.maxSleep": "10s"}), nil)
	lockOnce(t, s, "down", "first") // makes the parents
	srv.Stop()
	defer srv.Start()
	lockEventually(t, 20*time.Second, "the session lost", func() bool { return s.conn.State() != zk.StateHasSession })
	ch := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := s.Lock(context.Background(), "down", "try", false)
		ch <- err
	}()
	select {
	case err := <-ch:
		if !errors.Is(err, driver.ErrUnavailable) {
			t.Errorf("TryLock with the server down: %v, want ErrUnavailable", err)
		}
		if took := time.Since(start); took > tryLockBound {
			t.Errorf("TryLock with the server down took %v, want at most %v", took, tryLockBound)
		}
		t.Logf("TryLock: %v after %v", err, time.Since(start))
	case <-time.After(20 * time.Second):
		t.Fatal("TryLock with the server down: no answer within 20s")
	}
}

// TestLockSuspendCounted: time the machine spends suspended counts
// towards a hold's deadline. A suspend longer than the session timeout is
// simulated through the lock's clock, with the store's network frozen (to
// the server, a suspended machine is silent): Lost must close within a few
// deadline steps, without anyone calling Lost again.
func TestLockSuspendCounted(t *testing.T) {
	onEachVersion(t, func(_ *zktest.Server) []serverCheck {
		return []serverCheck{{"Suspend", testLockSuspendCounted}}
	})
}

func testLockSuspendCounted(t *testing.T, addr string) {
	// Long enough that the hold's deadline, counted without the suspend,
	// is far past the bound below.
	const timeout = 20 * time.Second
	proxy := zktest.NewProxy(t, addr)
	s := openTest(t, testOptions(proxy.Addr(), map[string]string{"sessionTimeout": timeout.String()}), nil)
	defer proxy.Thaw() // before Close
	var slept atomic.Int64
	s.sess.clock = func() time.Duration { return monoNow() + time.Duration(slept.Load()) }
	ctx := t.Context()
	l, err := s.Lock(ctx, "suspend", "s", true)
	if err != nil {
		t.Fatal(err)
	}
	lost := l.Lost()
	heldFor(t, l, time.Second, "the holder")
	// Suspended for 2T: the server expired the session meanwhile.
	proxy.Freeze()
	slept.Store(int64(2 * timeout))
	start := time.Now()
	select {
	case <-lost:
	case <-time.After(3 * deadlineStep):
		t.Fatalf("a suspend of %v not counted: Lost still open %v later", 2*timeout, 3*deadlineStep)
	}
	t.Logf("Lost closed %v after the simulated resume: %v", time.Since(start), l.(*lockHold).LostErr())
}

// TestLockCloseRacesLock: Close racing Lock on a caller's connection never
// leaves a node in the caller's session, which outlives the store.
func TestLockCloseRacesLock(t *testing.T) {
	onEachVersion(t, func(_ *zktest.Server) []serverCheck {
		return []serverCheck{{"CloseRacesLock", testLockCloseRacesLock}}
	})
}

func testLockCloseRacesLock(t *testing.T, addr string) {
	conn := rawConn(t, addr)
	check := rawConn(t, addr)
	root := randomRoot()
	const name = "race"
	opts := map[string]string{"root": root, "sessionTimeout": "4s"}
	first, err := newOnConn(conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	lockOnce(t, first, name, "first") // makes the parents
	first.Close()
	parent := first.lockParent(name)

	// Close runs whole between the Lock call being counted in and its
	// create being marked in flight: the create must not go out.
	s, err := newOnConn(conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	s.sess.beforeCreate = func() {
		go func() {
			s.Close()
			close(closed)
		}()
		lockEventually(t, 10*time.Second, "Close done with lock cleanup", func() bool {
			s.sess.mu.Lock()
			defer s.sess.mu.Unlock()
			return s.sess.stopped
		})
	}
	if _, err := s.Lock(t.Context(), name, "racer", true); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("Lock whose store closed before its create: %v, want ErrClosed", err)
	}
	<-closed
	if nodes := lockNodes(t, check, parent); len(nodes) > 0 {
		t.Fatalf("nodes %q left in the caller's session after Close", nodes)
	}

	for i := range 100 {
		s, err := newOnConn(conn, opts)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			if l, err := s.Lock(t.Context(), name, "racer", true); err == nil {
				<-l.Lost() // Close ends it
			}
		})
		// Spread the Close over the Lock's steps: before, around and
		// after the create is sent.
		time.Sleep(time.Duration(i%20) * 50 * time.Microsecond)
		s.Close()
		wg.Wait()
		if nodes := lockNodes(t, check, parent); len(nodes) > 0 {
			t.Fatalf("round %d: nodes %q left in the caller's session after Close", i, nodes)
		}
	}
}
