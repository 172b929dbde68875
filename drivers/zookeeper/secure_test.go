package zookeeper

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/go-cmp/cmp"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/zktest"
	"github.com/cosid-go/store/tck"
)

// TestDigest runs the auth and acl checks on one plaintext server of each
// supported version.
func TestDigest(t *testing.T) {
	onEachVersion(t, func(srv *zktest.Server) []serverCheck {
		return []serverCheck{
			{"TCK", func(t *testing.T, addr string) { testDigestTCK(t, srv) }},
			{"OthersGetNoAuth", testOthersGetNoAuth},
			{"AuthAfterReconnect", testAuthAfterReconnect},
			{"RejectedAuth", testRejectedAuth},
			{"ExistingACLsKept", testExistingACLsKept},
			{"ExplicitACL", testExplicitACL},
		}
	})
}

// newSecret returns a fresh password containing secretWord.
func newSecret() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return secretWord + hex.EncodeToString(b[:])
}

// digestHarness opens stores authenticated as one digest user, with the
// default acl (creator), each check on a root of its own; it records the
// roots so the test can look at every node afterwards.
type digestHarness struct {
	srv        *zktest.Server
	root, auth string
}

func (h digestHarness) NewStore(context.Context) (driver.Store, error) {
	return openWith(testOptions(h.srv.Addr(), map[string]string{"root": h.root, "auth": h.auth}))
}

func (h digestHarness) Close() error { return nil }

// Restart restarts the server on its data (tck.Restarter): the nodes keep
// their ACLs, and the stores opened after it authenticate again.
func (h digestHarness) Restart(context.Context) error { return restartServer(h.srv) }

// testDigestTCK: the whole TCK passes with digest auth and the creator
// ACL; then clients without auth, or with another digest, get NoAuth on
// every node below every root the TCK used.
func testDigestTCK(t *testing.T, srv *zktest.Server) {
	addr := srv.Addr()
	auth := "digest:alice:" + newSecret()
	var mu sync.Mutex
	var roots []string
	tck.Run(t, tck.Suite{
		NewHarness: func(context.Context, *testing.T) (tck.Harness, error) {
			root := randomRoot()
			mu.Lock()
			roots = append(roots, root)
			mu.Unlock()
			return digestHarness{srv: srv, root: root, auth: auth}, nil
		},
		Ranges:    true,
		Slots:     true,
		Locks:     true,
		Factory:   openWith,
		TimeScale: 2,
	})
	if t.Failed() {
		return
	}
	owner := rawClient(t, addr, auth)
	outsiders := outsiderClients(t, addr)
	nodes := 0
	for _, root := range roots {
		nodes += checkNoAuth(t, owner, outsiders, root)
	}
	if nodes == 0 {
		t.Fatal("the TCK left no node to check")
	}
	t.Logf("%d nodes below %d roots refuse outsiders", nodes, len(roots))
}

// testOthersGetNoAuth: while a store holds a range key, a lease and a lock,
// outsiders get NoAuth on every node below its root, and the store goes on
// as if they were not there.
func testOthersGetNoAuth(t *testing.T, addr string) {
	ctx := context.Background()
	auth := "digest:alice:" + newSecret()
	opts := testOptions(addr, map[string]string{"auth": auth})
	st, err := store.Open("zookeeper", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r1, err := st.Ranges().Next(ctx, "orders/eu", 10)
	if err != nil {
		t.Fatal(err)
	}
	ns := store.Namespace{Name: "workers", Limit: 4, Tolerance: time.Second}
	lease, err := st.Slots().Acquire(ctx, ns, "host-a", store.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	lock, err := st.Locks().Lock(ctx, "rebalance")
	if err != nil {
		t.Fatal(err)
	}

	n := checkNoAuth(t, rawClient(t, addr, auth), outsiderClients(t, addr), opts["root"])
	if n < 8 {
		t.Errorf("only %d nodes below the root", n)
	}

	r2, err := st.Ranges().Next(ctx, "orders/eu", 10)
	if err != nil || r2.Start != r1.End {
		t.Errorf("Next after the outsiders: %+v, %v; want the range after %+v", r2, err, r1)
	}
	if _, err := st.Slots().Renew(ctx, lease); err != nil {
		t.Errorf("Renew after the outsiders: %v", err)
	}
	select {
	case <-lock.Lost():
		t.Error("the lock was lost")
	default:
	}
	if err := lock.Unlock(ctx); err != nil {
		t.Errorf("Unlock: %v", err)
	}
}

// rawClient is a go-zookeeper session on addr with the given auth entries
// (scheme:credentials), closed when the test ends.
func rawClient(t *testing.T, addr string, auth ...string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	deadline := time.After(20 * time.Second)
	for conn.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-deadline:
			t.Fatalf("no session with %s", addr)
		}
	}
	for _, a := range auth {
		scheme, cred, _ := strings.Cut(a, ":")
		if err := conn.AddAuth(scheme, []byte(cred)); err != nil {
			t.Fatalf("AddAuth %s: %v", scheme, err)
		}
	}
	return conn
}

// outsiderClients are a session without auth and one with another digest.
func outsiderClients(t *testing.T, addr string) map[string]*zk.Conn {
	return map[string]*zk.Conn{
		"no auth":        rawClient(t, addr),
		"another digest": rawClient(t, addr, "digest:mallory:"+newSecret()),
	}
}

// checkNoAuth lists root and every node below it through owner, and checks
// that each outsider can neither read, list, write, add children to nor
// delete any of them (root's own deletion is up to its parent's ACL, which
// the store does not own). It returns how many nodes it checked.
func checkNoAuth(t *testing.T, owner *zk.Conn, outsiders map[string]*zk.Conn, root string) int {
	t.Helper()
	nodes := walk(t, owner, root)
	for name, c := range outsiders {
		for _, p := range nodes {
			ops := map[string]func() error{
				"get":      func() error { _, _, err := c.Get(p); return err },
				"children": func() error { _, _, err := c.Children(p); return err },
				"set":      func() error { _, err := c.Set(p, []byte("x"), -1); return err },
				"create":   func() error { _, err := c.Create(p+"/intruder", nil, 0, zk.WorldACL(zk.PermAll)); return err },
			}
			if p != root {
				ops["delete"] = func() error { return c.Delete(p, -1) }
			}
			for op, f := range ops {
				if err := f(); !errors.Is(err, zk.ErrNoAuth) {
					t.Errorf("client with %s: %s %s: %v, want NoAuth", name, op, p, err)
				}
			}
		}
	}
	// Nothing changed: the owner sees the same nodes.
	if diff := cmp.Diff(nodes, walk(t, owner, root)); diff != "" {
		t.Errorf("nodes below %s changed (-before +after):\n%s", root, diff)
	}
	return len(nodes)
}

// walk returns root and every node below it, sorted; nil if root does not
// exist.
func walk(t *testing.T, c *zk.Conn, root string) []string {
	t.Helper()
	var out []string
	var visit func(p string)
	visit = func(p string) {
		kids, _, err := c.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return
		}
		if err != nil {
			t.Fatalf("children of %s: %v", p, err)
		}
		out = append(out, p)
		for _, k := range kids {
			visit(p + "/" + k)
		}
	}
	visit(root)
	slices.Sort(out)
	return out
}

// pollUntil polls cond, state observable only remotely or through the
// connection, every 20ms until it holds or timeout passes.
func pollUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testAuthAfterReconnect: after the connection is cut and made again, the
// session carries the credentials again, so the store can still write its
// creator-only nodes.
func testAuthAfterReconnect(t *testing.T, addr string) {
	proxy := zktest.NewProxy(t, addr)
	s := openTest(t, testOptions(proxy.Addr(), map[string]string{"auth": "digest:alice:" + newSecret(), "sessionTimeout": "10s"}), nil)
	st, err := store.OpenDriver(s, store.WithTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	r1, err := st.Ranges().Next(ctx, "k", 5)
	if err != nil {
		t.Fatal(err)
	}
	sid := s.conn.SessionID()
	proxy.Cut()
	pollUntil(t, 10*time.Second, "the disconnect noticed", func() bool { return zk.State(s.state.Load()) != zk.StateHasSession })
	proxy.Restore()
	r2, err := st.Ranges().Next(ctx, "k", 5)
	if err != nil || r2.Start != r1.End {
		t.Fatalf("Next after the reconnect: %+v, %v; want the range after %+v", r2, err, r1)
	}
	if s.conn.SessionID() != sid || proxy.Conns() < 2 {
		t.Fatalf("session %x -> %x, %d connections: the test did not reconnect the same session", sid, s.conn.SessionID(), proxy.Conns())
	}
}

// testRejectedAuth: an auth entry the server refuses (a scheme it has no
// provider for) fails Open within blockUntilConnectedWait, naming the
// scheme and not the credentials.
func testRejectedAuth(t *testing.T, addr string) {
	const wait = 20 * time.Second
	start := time.Now()
	_, err := openWith(testOptions(addr, map[string]string{
		"auth":                    "digest:alice:" + newSecret() + ",ldap:alice:" + newSecret(),
		"blockUntilConnectedWait": wait.String(),
	}))
	took := time.Since(start)
	if err == nil {
		t.Fatal("Open succeeded with an auth scheme the server has no provider for")
	}
	msg := err.Error()
	t.Logf("Open: %v (after %v)", err, took)
	if !strings.Contains(msg, `scheme "ldap"`) || !strings.Contains(msg, "entry 2") || !strings.Contains(msg, "rejected") {
		t.Errorf("error %q does not say the server rejected auth entry 2, scheme ldap", msg)
	}
	if strings.Contains(msg, secretWord) || strings.Contains(msg, "alice") {
		t.Errorf("error %q shows the credentials", msg)
	}
	if !errors.Is(err, zk.ErrAuthFailed) {
		t.Errorf("error %v does not wrap zk.ErrAuthFailed", err)
	}
	if took >= wait {
		t.Errorf("Open took %v, not within blockUntilConnectedWait %v", took, wait)
	}
}

// testExistingACLsKept: nodes made beforehand with other ACLs are used as
// they are; only the nodes the store creates get its ACL.
func testExistingACLsKept(t *testing.T, addr string) {
	secret := newSecret()
	owner := rawClient(t, addr, "digest:alice:"+secret)
	root := randomRoot()
	readable := append(zk.DigestACL(zk.PermAll, "alice", secret), zk.WorldACL(zk.PermRead)...)
	for _, p := range []string{root, root + "/range"} {
		if _, err := owner.Create(p, nil, 0, readable); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := owner.Create(root+"/range/old", []byte("5"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open("zookeeper", testOptions(addr, map[string]string{"root": root, "auth": "digest:alice:" + secret}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	if r, err := st.Ranges().Next(ctx, "old", 10); err != nil || r.Start != 5 {
		t.Fatalf("Next on the existing key: %+v, %v", r, err)
	}
	if _, err := st.Ranges().Next(ctx, "new", 10); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string][]zk.ACL{
		root:                readable,
		root + "/range":     readable,
		root + "/range/old": zk.WorldACL(zk.PermAll),
		root + "/range/new": zk.DigestACL(zk.PermAll, "alice", secret), // creator, as ZooKeeper stores it
	} {
		got, _, err := owner.GetACL(p)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ACL of %s (-want +got):\n%s", p, diff)
		}
	}
}

// testExplicitACL: an acl list is set as given on every node the store
// creates: here the store's user may do anything, everyone may read.
func testExplicitACL(t *testing.T, addr string) {
	secret := newSecret()
	want := append(zk.DigestACL(zk.PermAll, "alice", secret), zk.WorldACL(zk.PermRead)...)
	acl := "digest:" + want[0].ID + ":crwda,world:anyone:r"
	opts := testOptions(addr, map[string]string{"auth": "digest:alice:" + secret, "acl": acl})
	st, err := store.Open("zookeeper", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	if _, err := st.Ranges().Next(ctx, "k", 10); err != nil {
		t.Fatal(err)
	}
	anyone := rawClient(t, addr)
	root := opts["root"]
	nodes := walk(t, anyone, root)
	if len(nodes) != 3 {
		t.Fatalf("nodes %q, want root, range and the key", nodes)
	}
	// ZooKeeper shows a digest's hash only to a session with the admin
	// permission (to others it reads "alice:x").
	owner := rawClient(t, addr, "digest:alice:"+secret)
	for _, p := range nodes {
		got, _, err := owner.GetACL(p)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ACL of %s (-want +got):\n%s", p, diff)
		}
	}
	if _, err := anyone.Set(root+"/range/k", []byte("0"), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("set by anyone: %v, want NoAuth", err)
	}
}
