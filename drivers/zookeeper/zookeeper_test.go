package zookeeper

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/leakcheck"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestServer runs the checks that need a server, once per supported
// ZooKeeper version, each on one server with a root of its own. The
// conformance kit runs in TestTCK.
func TestServer(t *testing.T) {
	onEachVersion(t, func(*zktest.Server) []serverCheck {
		return []serverCheck{
			{"OneRequestPerNext", testOneRequestPerNext},
			{"DeletedNode", testDeletedNode},
			{"RecreatedNode", testRecreatedNode},
			{"CorruptData", testCorruptData},
			{"VersionMinusOne", testVersionMinusOne},
			{"HandWrittenNodes", testHandWrittenNodes},
			{"ParentsAreNotKeys", testParentsAreNotKeys},
			{"LongAndDeepKeys", testLongAndDeepKeys},
			{"SupplementaryCharacters", testSupplementaryCharacters},
			{"LostAnswerIsAGap", testLostAnswerIsAGap},
			{"ContextEndsInFlight", testContextEndsInFlight},
			{"RetryThenRecover", testRetryThenRecover},
			{"SessionExpiry", testSessionExpiry},
			{"CallerConnection", testCallerConnection},
			{"NoGoroutineLeft", testNoGoroutineLeft},
		}
	})
}

// testOneRequestPerNext: once a store has used a key, Next is a single
// request (the compare-and-set), counted on the wire.
func testOneRequestPerNext(t *testing.T, addr string) {
	var w wire
	s := openTest(t, testOptions(addr, nil), &w)
	ctx := t.Context()
	if _, err := s.Next(ctx, "steady", 1); err != nil { // creates the node
		t.Fatal(err)
	}
	const calls = 20
	before, sets := w.requests(-1), w.requests(opSetData)
	for i := range calls {
		start, err := s.Next(ctx, "steady", 1)
		if err != nil {
			t.Fatal(err)
		}
		if start != int64(i+1) {
			t.Fatalf("Next #%d = %d, want %d", i+2, start, i+1)
		}
	}
	if got := w.requests(-1) - before; got != calls {
		t.Errorf("%d Next calls sent %d requests, want %d", calls, got, calls)
	}
	if got := w.requests(opSetData) - sets; got != calls {
		t.Errorf("%d Next calls sent %d setData requests, want %d", calls, got, calls)
	}
}

// testDeletedNode: a node the store used and that was deleted is refused
// by every operation, and never recreated.
func testDeletedNode(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	conn := rawConn(t, addr)
	ctx := t.Context()
	path := s.rangePath("deleted")
	if _, err := s.Next(ctx, "deleted", 10); err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete(path, -1); err != nil {
		t.Fatal(err)
	}
	_, err := s.Next(ctx, "deleted", 10)
	wantIs(t, err, driver.ErrRecreated, "Next after the node was deleted")
	_, _, err = s.Current(ctx, "deleted")
	wantIs(t, err, driver.ErrRecreated, "Current after the node was deleted")
	_, err = s.Seal(ctx, "deleted")
	wantIs(t, err, driver.ErrRecreated, "Seal after the node was deleted")
	wantIs(t, s.Init(ctx, "deleted", 0), driver.ErrRecreated, "Init after the node was deleted")
	if ok, _, err := conn.Exists(path); err != nil || ok {
		t.Errorf("after the refusals, %s exists: %v (err %v); the store must not recreate it", path, ok, err)
	}
}

// testRecreatedNode: a node deleted and recreated by hand is refused, even
// when it was brought to the very version the store remembers, and its
// range is not handed out although the compare-and-set landed.
func testRecreatedNode(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	conn := rawConn(t, addr)
	ctx := t.Context()
	for _, sameVersion := range []bool{true, false} {
		key := "recreated/other-version"
		if sameVersion {
			key = "recreated/same-version"
		}
		path := s.rangePath(key)
		for range 3 {
			if _, err := s.Next(ctx, key, 10); err != nil {
				t.Fatal(err)
			}
		}
		_, stat, err := conn.Get(path)
		if err != nil {
			t.Fatal(err)
		}
		remembered := stat.Version
		if err := conn.Delete(path, -1); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create(path, []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		want := remembered
		if !sameVersion {
			want = remembered + 1
		}
		for v := int32(0); v < want; v++ {
			if _, err := conn.Set(path, []byte("0"), v); err != nil {
				t.Fatal(err)
			}
		}
		_, err = s.Next(ctx, key, 10)
		wantIs(t, err, driver.ErrRecreated, "Next on a recreated node (same version: %v)", sameVersion)
		_, err = s.Next(ctx, key, 10)
		wantIs(t, err, driver.ErrRecreated, "second Next on a recreated node (same version: %v)", sameVersion)
		_, _, err = s.Current(ctx, key)
		wantIs(t, err, driver.ErrRecreated, "Current of a recreated node (same version: %v)", sameVersion)
	}
}

// testCorruptData: data that does not parse fails every operation with
// ErrCorrupt naming the path and the data, and is left as it was.
func testCorruptData(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	conn := rawConn(t, addr)
	ctx := t.Context()
	path := s.rangePath("corrupt")
	mustCreatePath(t, conn, path, "12x4")
	_, before, err := conn.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	check := func(err error, what string) {
		t.Helper()
		if wantIs(t, err, driver.ErrCorrupt, "%s", what) {
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "12x4") {
				t.Errorf("%s: error %q does not name the path %s and the data", what, msg, path)
			}
		}
	}
	_, err = s.Next(ctx, "corrupt", 1)
	check(err, "Next")
	_, _, err = s.Current(ctx, "corrupt")
	check(err, "Current")
	_, err = s.Seal(ctx, "corrupt")
	check(err, "Seal")
	check(s.Init(ctx, "corrupt", 0), "Init")
	_, err = s.Keys(ctx)
	check(err, "Keys")
	data, after, err := conn.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "12x4" || after.Version != before.Version {
		t.Errorf("corrupt node now holds %q at version %d, want it untouched (%q at version %d)",
			data, after.Version, "12x4", before.Version)
	}
}

// testVersionMinusOne: a compare-and-set is never sent with expected
// version -1, which ZooKeeper reads as "any version". No server can be
// driven to -1 in a test, so the store's remembered version is set to it.
func testVersionMinusOne(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	conn := rawConn(t, addr)
	ctx := t.Context()
	if _, err := s.Next(ctx, "minus-one", 1); err != nil {
		t.Fatal(err)
	}
	s.keys["minus-one"].version = -1
	_, err := s.Next(ctx, "minus-one", 1)
	if err == nil || !strings.Contains(err.Error(), "version -1") {
		t.Errorf("Next at version -1: %v, want a refusal naming version -1", err)
	}
	if data, stat, err := conn.Get(s.rangePath("minus-one")); err != nil || string(data) != "1" || stat.Version != 1 {
		t.Errorf("the node holds %q at version %d (err %v), want it untouched", data, stat.Version, err)
	}
}

// testHandWrittenNodes: nodes written by hand in the documented format are
// read as documented.
func testHandWrittenNodes(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	st := portable(t, s)
	conn := rawConn(t, addr)
	ctx := t.Context()
	mustCreatePath(t, conn, s.rangePath("hand/open"), "1200")
	mustCreatePath(t, conn, s.rangePath("hand/sealed"), "1200:sealed")

	r := st.Ranges()
	if next, sealed, err := r.Current(ctx, "hand/open"); err != nil || next != 1200 || sealed {
		t.Errorf(`Current("hand/open") = (%d, %v, %v), want (1200, false, nil)`, next, sealed, err)
	}
	if next, sealed, err := r.Current(ctx, "hand/sealed"); err != nil || next != 1200 || !sealed {
		t.Errorf(`Current("hand/sealed") = (%d, %v, %v), want (1200, true, nil)`, next, sealed, err)
	}
	if got, err := r.Next(ctx, "hand/open", 100); err != nil || got != (store.Range{Start: 1200, End: 1300}) {
		t.Errorf(`Next("hand/open", 100) = (%v, %v), want [1200, 1300)`, got, err)
	}
	_, err := r.Next(ctx, "hand/sealed", 1)
	wantIs(t, err, store.ErrSealed, `Next("hand/sealed")`)
	if n, err := r.Seal(ctx, "hand/open"); err != nil || n != 1300 {
		t.Errorf(`Seal("hand/open") = (%d, %v), want 1300`, n, err)
	}
	if data, _, err := conn.Get(s.rangePath("hand/open")); err != nil || string(data) != "1300:sealed" {
		t.Errorf("the sealed node holds %q (err %v), want %q", data, err, "1300:sealed")
	}
	keys, err := r.Keys(ctx)
	if err != nil || strings.Join(keys, ",") != "hand/open,hand/sealed" {
		t.Errorf("Keys = %q (err %v), want [hand/open hand/sealed] without the parent hand", keys, err)
	}
}

// testParentsAreNotKeys: the empty parent of a key with '/' is no key until
// used, and then starts at 0.
func testParentsAreNotKeys(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	ctx := t.Context()
	if _, err := s.Next(ctx, "p/q/r", 7); err != nil {
		t.Fatal(err)
	}
	if keys, err := s.Keys(ctx); err != nil || strings.Join(keys, ",") != "p/q/r" {
		t.Errorf("Keys = %q (err %v), want [p/q/r]", keys, err)
	}
	if next, sealed, err := s.Current(ctx, "p/q"); err != nil || next != 0 || sealed {
		t.Errorf(`Current("p/q") = (%d, %v, %v), want (0, false, nil)`, next, sealed, err)
	}
	if start, err := s.Next(ctx, "p/q", 5); err != nil || start != 0 {
		t.Errorf(`Next("p/q", 5) = (%d, %v), want 0`, start, err)
	}
	if err := s.Init(ctx, "p", 40); err != nil {
		t.Errorf(`Init("p", 40) of an empty parent: %v`, err)
	}
	if keys, err := s.Keys(ctx); err != nil || strings.Join(keys, ",") != "p,p/q,p/q/r" {
		t.Errorf("Keys = %q (err %v), want [p p/q p/q/r]", keys, err)
	}
	if next, _, err := s.Current(ctx, "p/q/r"); err != nil || next != 7 {
		t.Errorf(`Current("p/q/r") = (%d, %v), want 7`, next, err)
	}
}

// testLongAndDeepKeys: the longest key, and a key nested 512 levels deep
// (parents created one by one, Keys walking every level).
func testLongAndDeepKeys(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	ctx := t.Context()
	long := strings.Repeat("k", store.MaxKeyLen)
	deep := strings.Repeat("k/", store.MaxKeyLen/2-1) + "kk"
	for _, key := range []string{long, deep} {
		if start, err := s.Next(ctx, key, 3); err != nil || start != 0 {
			t.Fatalf("Next of a %d-byte key = (%d, %v)", len(key), start, err)
		}
	}
	keys, err := s.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0] != deep || keys[1] != long {
		t.Errorf("Keys returned %d keys, want the deep and the long one", len(keys))
	}
}

// testSupplementaryCharacters: ZooKeeper refuses characters above U+FFFF
// in paths (it checks UTF-16, where they are surrogates); the driver says
// so as an invalid argument instead of sending the request.
func testSupplementaryCharacters(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	_, err := s.Next(t.Context(), "emoji/\U0001F600", 1)
	if wantIs(t, err, driver.ErrInvalidArgument, "Next of a key with U+1F600") && !strings.Contains(err.Error(), "U+1F600") {
		t.Errorf("error %q does not name the character", err)
	}
	conn := rawConn(t, addr)
	_, err = conn.Create("/\U0001F600", nil, 0, zk.WorldACL(zk.PermAll))
	if !errors.Is(err, zk.ErrBadArguments) {
		t.Errorf("the server accepted or refused otherwise a path with U+1F600: %v; the driver's check may be stale", err)
	}
}

// testLostAnswerIsAGap: the connection drops right after a compare-and-set
// was sent, so its answer is lost. Whether or not the server applied it,
// the store must not count it as its own: if it was applied, its range is
// skipped.
func testLostAnswerIsAGap(t *testing.T, addr string) {
	var w wire
	s := openTest(t, testOptions(addr, nil), &w)
	conn := rawConn(t, addr)
	ctx := t.Context()
	if _, err := s.Next(ctx, "lost", 10); err != nil {
		t.Fatal(err)
	}
	sent := w.dropFirstAnswer(opSetData)
	start, err := s.Next(ctx, "lost", 10)
	if err != nil {
		t.Fatalf("Next across a lost answer: %v", err)
	}
	if !sent() {
		t.Fatal("no setData was sent")
	}
	data, stat, err := conn.Get(s.rangePath("lost"))
	if err != nil {
		t.Fatal(err)
	}
	// Version 1 is the creation; the lost write, if applied, is version 2.
	switch {
	case stat.Version == 3 && start == 20:
		t.Log("the lost write was applied; its range [10, 20) was skipped")
	case stat.Version == 2 && start == 10:
		t.Log("the lost write was not applied")
	default:
		t.Errorf("Next = %d with the node at version %d holding %q: the lost write's range was counted as ours",
			start, stat.Version, data)
	}
}

// testContextEndsInFlight: a compare-and-set is held in flight until the
// caller's context ends, then released and applied. The store must skip
// its range: the next Next starts after it.
func testContextEndsInFlight(t *testing.T, addr string) {
	var w wire
	s := openTest(t, testOptions(addr, nil), &w)
	ctx := t.Context()
	if _, err := s.Next(ctx, "inflight", 10); err != nil {
		t.Fatal(err)
	}
	held, release := w.holdFirst(opSetData)
	short, cancel := context.WithCancel(ctx)
	go func() {
		<-held
		cancel()
	}()
	_, err := s.Next(short, "inflight", 10)
	wantIs(t, err, context.Canceled, "Next whose context ended in flight")
	close(release)
	start, err := s.Next(ctx, "inflight", 10)
	if err != nil {
		t.Fatal(err)
	}
	if start != 20 {
		t.Errorf("Next after an abandoned write = %d, want 20 (the abandoned range [10, 20) skipped)", start)
	}
}

// testRetryThenRecover: with every connection cut, Next gives up after its
// retries; once the proxy forwards again, the store works on.
func testRetryThenRecover(t *testing.T, addr string) {
	proxy := zktest.NewProxy(t, addr)
	s := openTest(t, testOptions(proxy.Addr(), map[string]string{
		"retry.baseSleepTime": "10ms", "retry.maxSleep": "20ms", "retry.maxRetries": "2",
	}), nil)
	ctx := t.Context()
	if _, err := s.Next(ctx, "retry", 1); err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	cut, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := s.Next(cut, "retry", 1)
	if err == nil || !strings.Contains(err.Error(), "gave up after 2 retries") {
		t.Errorf("Next with the connection cut: %v, want it to give up after 2 retries", err)
	}
	if cut.Err() != nil {
		t.Errorf("Next with the connection cut ran until its context ended; it should give up first")
	}
	proxy.Restore()
	start, err := s.Next(ctx, "retry", 1)
	if err != nil {
		t.Fatalf("Next after Restore: %v", err)
	}
	if start < 1 {
		t.Errorf("Next after Restore = %d, want at least 1", start)
	}
}

// testSessionExpiry: cut off longer than its session timeout, the store
// goes on with a new session, and keeps no socket of the old one.
func testSessionExpiry(t *testing.T, addr string) {
	proxy := zktest.NewProxy(t, addr)
	s := openTest(t, testOptions(proxy.Addr(), map[string]string{"sessionTimeout": "1s"}), nil)
	ctx := t.Context()
	if _, err := s.Next(ctx, "expiry", 1); err != nil {
		t.Fatal(err)
	}
	old := s.conn.SessionID()
	// An ephemeral node of the store's session shows, to another client,
	// when the server has expired that session.
	marker := randomRoot()
	if _, err := s.conn.Create(marker, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	// The fault itself: the server expires a session it has not heard of
	// for its timeout. Polled: only the server knows when.
	watcher := rawConn(t, addr)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok, _, err := watcher.Exists(marker)
		if err == nil && !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not expire the cut-off session within 60s (Exists(%s) = %v, %v)", marker, ok, err)
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
	proxy.Restore()
	long, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start, err := s.Next(long, "expiry", 1)
	if err != nil {
		t.Fatalf("Next after the session expired: %v", err)
	}
	if start < 1 {
		t.Errorf("Next after the session expired = %d, want at least 1", start)
	}
	if id := s.conn.SessionID(); id == old {
		t.Errorf("the session (%#x) did not expire; the test proves nothing", id)
	}
	s.dialer.mu.Lock()
	open := len(s.dialer.conns)
	s.dialer.mu.Unlock()
	if open != 1 {
		t.Errorf("the store holds %d sockets, want 1", open)
	}
}

// testCallerConnection: New uses the caller's connection and Close leaves
// it open; the connection options are refused.
func testCallerConnection(t *testing.T, addr string) {
	conn := rawConn(t, addr)
	root := randomRoot()
	s, err := newOnConn(conn, map[string]string{"root": root, "retry.maxRetries": "3"})
	if err != nil {
		t.Fatal(err)
	}
	if start, err := s.Next(t.Context(), "caller", 3); err != nil || start != 0 {
		t.Fatalf("Next on the caller's connection = (%d, %v)", start, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	_, err = s.Next(t.Context(), "caller", 3)
	wantIs(t, err, driver.ErrClosed, "Next after Close")
	if data, _, err := conn.Get(root + "/range/caller"); err != nil || string(data) != "3" {
		t.Errorf("the caller's connection after Close: Get = (%q, %v), want (\"3\", nil)", data, err)
	}
	if st := conn.State(); st != zk.StateHasSession {
		t.Errorf("the caller's connection is in state %v after the store closed", st)
	}
}

// testNoGoroutineLeft: after Close nothing the store started runs: not its
// calls (also one abandoned in flight on a cut connection), not
// go-zookeeper's.
func testNoGoroutineLeft(t *testing.T, addr string) {
	proxy := zktest.NewProxy(t, addr)
	defer leakcheck.VerifyNone(t, goleak.IgnoreCurrent())
	useCutAndClose(t, testOptions(proxy.Addr(), nil), proxy)
	ctx := t.Context()

	// A store on a caller's connection leaves nothing either, once the
	// caller closes the connection.
	conn, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	c, err := newOnConn(conn, map[string]string{"root": randomRoot()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Next(ctx, "leak", 1); err != nil {
		t.Fatal(err)
	}
	c.Close()
	conn.Close()
}

// mustCreatePath creates path holding data, with empty parents.
func mustCreatePath(t *testing.T, conn *zk.Conn, path, data string) {
	t.Helper()
	for i := 1; i < len(path); i++ {
		if path[i] == '/' {
			if _, err := conn.Create(path[:i], nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatal(err)
			}
		}
	}
	if _, err := conn.Create(path, []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}

func wantIs(t *testing.T, err, target error, format string, args ...any) bool {
	t.Helper()
	if errors.Is(err, target) {
		return true
	}
	t.Errorf(format+": got %v, want %v", append(args, err, target)...)
	return false
}

var _ net.Conn = (*wireConn)(nil)
