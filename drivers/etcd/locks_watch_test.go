package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/etcdtest"
	"github.com/cosid-go/store/internal/testing/poll"
)

// gatedWatch holds back the starts of a session's watch: start n (from 1)
// waits until open(n); later starts than the gates made pass.
type gatedWatch struct {
	mu      sync.Mutex
	starts  int
	gates   []chan struct{}
	reached []chan struct{}
}

func newGatedWatch(n int) *gatedWatch {
	g := &gatedWatch{}
	for range n {
		g.gates = append(g.gates, make(chan struct{}))
		g.reached = append(g.reached, make(chan struct{}))
	}
	return g
}

func (g *gatedWatch) hook() {
	g.mu.Lock()
	i := g.starts
	g.starts++
	g.mu.Unlock()
	if i < len(g.gates) {
		close(g.reached[i])
		<-g.gates[i]
	}
}

func (g *gatedWatch) open(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.gates[n-1]:
	default:
		close(g.gates[n-1])
	}
}

func (g *gatedWatch) openAll() {
	for i := range g.gates {
		g.open(i + 1)
	}
}

// waitStart waits (bounded) until start n of the watch is held back.
func (g *gatedWatch) waitStart(t *testing.T, n int) {
	t.Helper()
	select {
	case <-g.reached[n-1]:
	case <-time.After(30 * time.Second):
		t.Fatalf("the session's watch did not start a %d. time within 30s", n)
	}
}

// openGated opens a store on the endpoints whose session's watch g holds
// back.
func openGated(t *testing.T, endpoints []string, prefix string, g *gatedWatch) *store.Store {
	t.Helper()
	return openDriverOn(t, endpoints[:1], prefix, func(d *driverStore) { d.watchHook = g.hook })
}

// TestLockDeleteAtRewatchCompacted: the session's watch broke (its
// revisions compacted) and re-read its keys at revision R; before it
// watches again, an operator deletes the held key (revision R+1) and
// compacts at exactly that revision. etcd answers a watch from the
// compaction revision itself without a compaction error, yet the
// compaction removed the delete's tombstone: a watch from R+1 would never
// hear of the delete, and the hold would stay while the next waiter holds
// too. The watch starts again from R (already read, so compacted: it
// re-reads the keys and finds the delete).
func TestLockDeleteAtRewatchCompacted(t *testing.T) {
	ctx := t.Context()
	// A member of its own: the test counts revisions.
	c := etcdtest.Start(t, 1)
	prefix := "/rewatch"
	g := newGatedWatch(2)
	defer g.openAll()
	st := openGated(t, c.Endpoints(), prefix, g)
	l, err := st.Locks().Lock(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	// Break the first watch: compact past its start.
	g.waitStart(t, 1)
	put, err := cli.Put(ctx, "/elsewhere", "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, put.Header.Revision); err != nil {
		t.Fatal(err)
	}
	g.open(1)
	g.waitStart(t, 2) // the keys were read again, at the latest revision
	key := prefix + "/lock/w/"
	del, err := cli.Delete(ctx, key, clientv3.WithPrefix())
	if err != nil || del.Deleted != 1 {
		t.Fatalf("the operator's delete: %v, %v", del, err)
	}
	if del.Header.Revision != put.Header.Revision+1 {
		t.Fatalf("the delete is at revision %d, not right after the re-read at %d: something else wrote", del.Header.Revision, put.Header.Revision)
	}
	if _, err := cli.Compact(ctx, del.Header.Revision); err != nil {
		t.Fatal(err)
	}
	g.open(2)
	select {
	case <-l.Lost():
		err := l.Unlock(ctx)
		if !errors.Is(err, driver.ErrLeaseLost) {
			t.Errorf("Unlock of the lost hold: %v, want ErrLeaseLost", err)
		}
		t.Logf("lost: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the hold whose key was deleted at the compaction revision is not lost after 10s")
	}
}

// TestUnlockAfterOperatorDelete: an operator deletes the held key, the
// next waiter is granted, and the holder calls Unlock before its session's
// watch (held back here: a slow stream) reports the delete. Unlock finds
// nothing to delete: the hold was lost while the holder trusted it, and
// Unlock must say so (ErrLeaseLost), not report a clean release.
func TestUnlockAfterOperatorDelete(t *testing.T) {
	ctx := t.Context()
	ep := sharedServer(t).Endpoints()
	prefix := freshPrefix("unlock-deleted")
	g := newGatedWatch(1)
	defer g.openAll()
	holder := openGated(t, ep, prefix, g)
	other, err := OpenStore(ctx, &Options{Endpoints: ep, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	l, err := holder.Locks().Lock(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	g.waitStart(t, 1)
	var granted atomic.Pointer[store.Lock]
	done := make(chan struct{})
	go func() {
		defer close(done)
		l2, err := other.Locks().Lock(ctx, "u")
		if err != nil {
			t.Errorf("the waiter's Lock: %v", err)
			return
		}
		granted.Store(l2)
	}()
	waitQueued(t, holder, "u", 2)
	cli := rawClient(t)
	resp, err := cli.Get(ctx, prefix+"/lock/u/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].CreateRevision != l.Fence() {
		t.Fatalf("the holder's key: %v, %v", resp, err)
	}
	if _, err := cli.Delete(ctx, string(resp.Kvs[0].Key)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter is not granted within 30s of the operator's delete")
	}
	if granted.Load() == nil {
		return
	}
	defer granted.Load().Unlock(context.Background())
	if err := l.Unlock(ctx); !errors.Is(err, driver.ErrLeaseLost) {
		t.Errorf("Unlock after an operator deleted the key and another store was granted the lock: %v, want ErrLeaseLost", err)
	}
	select {
	case <-l.Lost():
	default:
		t.Error("Unlock found the key deleted by someone else, yet Lost is open")
	}
	g.open(1)
	// The same name again on the same store: a new key, a new hold.
	granted.Load().Unlock(ctx)
	l3, err := holder.Locks().Lock(ctx, "u")
	if err != nil {
		t.Fatalf("Lock again after the lost hold: %v", err)
	}
	if l3.Fence() <= granted.Load().Fence() {
		t.Errorf("fence %d after the waiter's %d", l3.Fence(), granted.Load().Fence())
	}
	if err := l3.Unlock(ctx); err != nil {
		t.Errorf("Unlock of the new hold: %v", err)
	}
}

// watchMember returns the member that serves the only watch stream of the
// cluster (from its metrics), or nil.
func watchMember(t *testing.T, c *etcdtest.Cluster) *etcdtest.Member {
	t.Helper()
	var found *etcdtest.Member
	for _, m := range c.Members {
		resp, err := http.Get(m.ClientURL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, "etcd_debugging_mvcc_watch_stream_total "); ok && strings.TrimSpace(v) != "0" {
				found = m
			}
		}
	}
	return found
}

// TestLockWatchMemberCut: the holder's client knows all three members;
// its session's watch stream is served by one, its keep-alives go to any.
// That member is cut off: partitioned from its peers (it hears nothing
// more and has no leader), paused (its sockets stay open, it answers
// nothing) or killed. An operator deletes the held key through the others
// and the next waiter is granted. The keep-alives the other members answer
// keep the session's deadline moving, so only the watch can tell the
// holder: it must not stay deaf on that member. The holder's client has
// no keepalive (noKeepalive), so a paused member's connection never
// closes: the holder's Lost closes only if the session leaves a deaf
// watch itself, and stays open for ever otherwise (its guard, minutes,
// is against that hang; a bound under the keepalive's 10s+5s, as before,
// failed on a loaded machine).
func TestLockWatchMemberCut(t *testing.T) {
	for _, how := range []string{"Partitioned", "Paused", "Killed"} {
		t.Run(how, func(t *testing.T) { testLockWatchMemberCut(t, how) })
	}
}

func testLockWatchMemberCut(t *testing.T, how string) {
	ctx := t.Context()
	c := etcdtest.Start(t, 3)
	prefix := "/watch-cut"
	holder := openDriverOn(t, c.Endpoints(), prefix, func(d *driverStore) {
		d.cfg.sessionTTL = 3 * time.Second
		d.dialOpt = []grpc.DialOption{noKeepalive}
	})
	l, err := holder.Locks().Lock(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	var x *etcdtest.Member
	poll.Until(t, 30*time.Second, "a member serves the session's watch", func() bool {
		x = watchMember(t, c)
		return x != nil
	})
	var others []string
	for _, m := range c.Members {
		if m != x {
			others = append(others, m.ClientURL)
		}
	}
	switch how {
	case "Partitioned":
		c.Partition(t, x)
		defer c.Heal()
	case "Paused":
		x.Pause()
		defer x.Resume()
	case "Killed":
		x.Stop()
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: others, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	poll.Succeeds(t, 30*time.Second, "the operator deletes the held key through the majority", func() error {
		dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		resp, err := cli.Delete(dctx, prefix+"/lock/p/", clientv3.WithPrefix())
		if err == nil && resp.Deleted == 0 {
			// On a loaded machine the holder's keep-alives may have come
			// too late (its ttl is 3s): its lease ended and took the key,
			// which tells the holder as the delete would.
			if got, gerr := cli.Get(dctx, prefix+"/lock/p/", clientv3.WithPrefix(), clientv3.WithCountOnly()); gerr == nil && got.Count == 0 {
				t.Logf("the held key was gone before the operator's delete: the holder's lease ended")
				return nil
			}
		}
		if err == nil && resp.Deleted != 1 {
			err = fmt.Errorf("deleted %d keys", resp.Deleted)
		}
		return err
	})
	deleted := time.Now()
	waiter, err := OpenStore(ctx, &Options{Endpoints: others, Prefix: prefix, SessionTTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	l2, err := waiter.Locks().Lock(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Unlock(context.Background())
	select {
	case <-l.Lost():
		t.Logf("lost %v after the delete: %v", time.Since(deleted).Round(time.Millisecond), l.Unlock(ctx))
	case <-time.After(2 * time.Minute): // a guard against a hang, not a speed
		t.Fatalf("two holders: the held key was deleted %v ago, another store holds the lock, and the holder's Lost is open",
			time.Since(deleted).Round(time.Millisecond))
	}
}

// TestUnlockLateDeleteSparesNextHold: Unlock's delete loses its answer
// (applied only later, as after a lost connection) while an operator
// deletes the key and the session's watch reports that delete: Unlock
// takes the key as gone and frees its number. The store's next Lock of
// the name reuses the number, so the same key, and is granted. The late
// delete of the first Unlock must not remove the new hold's key: Unlock
// removes only its own hold, never a later one's.
func TestUnlockLateDeleteSparesNextHold(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("late-delete")
	cli := rawClient(t)
	var armed atomic.Bool
	late := make(chan func(), 1)
	var d *driverStore
	st := openDriver(t, prefix, func(s *driverStore) {
		d = s
		s.dialOpt = []grpc.DialOption{grpc.WithChainUnaryInterceptor(func(ictx context.Context, method string, req, reply any,
			cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			if !armed.Load() || !(strings.HasSuffix(method, "/DeleteRange") || strings.HasSuffix(method, "/Txn")) {
				return invoker(ictx, method, req, reply, cc, opts...)
			}
			armed.Store(false)
			// The operator's delete, seen by the watch while Unlock waits.
			key := prefix + "/lock/r/"
			if resp, err := cli.Delete(context.Background(), key, clientv3.WithPrefix()); err != nil || resp.Deleted != 1 {
				t.Errorf("the operator's delete: %v, %v", resp, err)
			}
			poll.Until(t, 10*time.Second, "the session's watch reports the operator's delete", func() bool {
				ss := d.lastSession()
				for _, h := range ss.watched() {
					h.state.mu.Lock()
					gone := h.state.gone
					h.state.mu.Unlock()
					if gone {
						return true
					}
				}
				return false
			})
			// Unlock's own request reaches the server later.
			late <- func() { invoker(context.Background(), method, req, reply, cc, opts...) }
			return status.Error(codes.Unavailable, "answer lost (test)")
		})}
	})
	l, err := st.Locks().Lock(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	if err := l.Unlock(ctx); err != nil {
		t.Logf("Unlock with its answer lost: %v", err)
	}
	send := <-late
	l2, err := st.Locks().Lock(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Unlock(context.Background())
	resp, err := cli.Get(ctx, prefix+"/lock/r/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the new hold's key: %v, %v", resp, err)
	}
	send()
	after, err := cli.Get(ctx, string(resp.Kvs[0].Key))
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Kvs) != 1 {
		t.Errorf("the first Unlock's late delete removed the next hold's key %s (fence %d)", resp.Kvs[0].Key, l2.Fence())
	}
}

// TestLockWaitTimesOutNotUnavailable: a Lock whose context ends while it
// waits behind a live holder, the members answering all along, reports the
// context's end, not that etcd is unavailable.
func TestLockWaitTimesOutNotUnavailable(t *testing.T) {
	ctx := t.Context()
	holder, waiter := openPair(t, freshPrefix("wait-timeout"))
	l, err := holder.Locks().Lock(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(context.Background())
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err = waiter.Locks().Lock(wctx, "b")
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, driver.ErrUnavailable) {
		t.Errorf("Lock that waited 3s behind a live holder: %v; want the deadline, not ErrUnavailable", err)
	}
}
