package etcd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/etcdtest"
	"github.com/cosid-go/store/internal/testing/poll"
)

// TestSlotFenceWentBack: a slot key put back to an older record (a
// restored backup) under a store that saw a later fence is refused with
// ErrCorrupt by that store's Acquire and Renew, rather than handing out
// a fence (and a floor) it handed out before.
func TestSlotFenceWentBack(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("fenceback")
	s := openShifted(t, prefix, 0)
	cli := rawClient(t)
	ns := driver.Namespace{Name: "n", Limit: 1, Tolerance: time.Millisecond}
	req := driver.AcquireRequest{Namespace: ns, Owner: "o", Incarnation: "i", TTL: time.Minute}
	sk := prefix + "/slot/n/0"
	l, err := s.Acquire(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, l, -1); err != nil {
		t.Fatal(err)
	}
	backup, err := cli.Get(ctx, sk)
	if err != nil || len(backup.Kvs) != 1 {
		t.Fatalf("read %s: %v", sk, err)
	}
	if l, err = s.Acquire(ctx, req); err != nil || l.Fence != 2 {
		t.Fatalf("second term: %+v, %v; want fence 2", l, err)
	}
	live := l
	// The backup comes back while the second term is live: its Renew.
	if _, err := cli.Put(ctx, sk, string(backup.Kvs[0].Value)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Renew(ctx, live); !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("Renew after the slot's fence went back from 2 to 1: %v; want ErrCorrupt", err)
	}
	// And an Acquire (the term would get fence 2 again).
	l3, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "p", Incarnation: "j", TTL: time.Minute})
	if !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("Acquire after the slot's fence went back from 2 to 1: %+v, %v; want ErrCorrupt", l3, err)
	}
	// Deleted outright: the fence would start again at 1.
	if _, err := cli.Delete(ctx, sk); err != nil {
		t.Fatal(err)
	}
	l4, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "p", Incarnation: "j", TTL: time.Minute})
	if !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("Acquire after the slot key (fence 2) was deleted: %+v, %v; want ErrCorrupt", l4, err)
	}
	// Another store, which saw nothing, does not take it either: the
	// namespace's slot tally counts a key deleted
	// (TestSlotKeyDeletedUnderLiveTerm).
	if l5, err := openShifted(t, prefix, 0).Acquire(ctx, req); !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("a fresh store's Acquire: %+v, %v; want ErrCorrupt", l5, err)
	}
}

// TestSlotPausedHolder: a child process holds the only slot and renews it
// every 200ms; it is stopped (SIGSTOP) past its ttl while this process
// takes the slot, then let go on. The new term's fence is one more and its
// floor at or above every ceiling the child was ever told; the child's
// next renewal fails with ErrLeaseLost and none succeeds after the
// takeover; its Release then fails too and changes nothing.
func TestSlotPausedHolder(t *testing.T) {
	if os.Getenv("ETCD_PAUSED_CHILD") != "" {
		pausedChild()
		return
	}
	ctx := t.Context()
	prefix := freshPrefix("paused")
	ep := sharedServer(t).Endpoints()[0]
	cmd := exec.Command(os.Args[0], "-test.run=^TestSlotPausedHolder$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ETCD_PAUSED_CHILD=1", "ETCD_PAUSED_EP="+ep, "ETCD_PAUSED_PREFIX="+prefix)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
	}()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "lease ") || strings.HasPrefix(line, "lost") || strings.HasPrefix(line, "error") {
				lines <- line
			}
		}
		close(lines)
	}()
	var fence, ceiling int64
	var renewals int
	read := func(line string) {
		t.Helper()
		var f, c int64
		if _, err := fmt.Sscanf(line, "lease %d %d", &f, &c); err != nil {
			t.Fatalf("the child says: %s", line)
		}
		if fence != 0 && f != fence {
			t.Fatalf("the child's fence changed from %d to %d", fence, f)
		}
		fence, ceiling = f, max(ceiling, c)
		renewals++
	}
	for renewals < 3 {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("the child ended")
			}
			read(line)
		case <-time.After(60 * time.Second):
			t.Fatal("the child did not renew its lease 3 times")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	s := openShifted(t, prefix, 0)
	ns := driver.Namespace{Name: "n", Limit: 1, Tolerance: 500 * time.Millisecond}
	var taken driver.Lease
	poll.Succeeds(t, 60*time.Second, "this process takes the paused child's slot", func() error {
		var err error
		taken, err = s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "taker", Incarnation: "t", TTL: time.Minute})
		return err
	})
	// Lines the child wrote before it stopped.
drain:
	for {
		select {
		case line := <-lines:
			read(line)
		default:
			break drain
		}
	}
	if taken.Fence != fence+1 || taken.Floor < ceiling {
		t.Errorf("the taken term: fence %d, floor %d; want fence %d, floor at or above the child's ceiling %d", taken.Fence, taken.Floor, fence+1, ceiling)
	}
	before := rawClient(t)
	sk := prefix + "/slot/n/0"
	rec, err := before.Get(ctx, sk)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var last string
	for line := range lines {
		last = line
		if strings.HasPrefix(line, "lease") {
			t.Errorf("the child renewed after the takeover: %s", line)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the child: %v", err)
	}
	if !strings.HasPrefix(last, "lost") || !strings.Contains(last, "release lost") {
		t.Errorf("the child's last word: %q; want its renewal and release lost", last)
	}
	now, err := before.Get(ctx, sk)
	if err != nil {
		t.Fatal(err)
	}
	if string(now.Kvs[0].Value) != string(rec.Kvs[0].Value) || now.Kvs[0].ModRevision != rec.Kvs[0].ModRevision {
		t.Error("the child's calls after the takeover changed the slot")
	}
}

// pausedChild acquires the only slot and renews it every 200ms, printing
// "lease fence ceiling" after each; once a renewal fails it releases the
// lease and prints "lost: ..." and how the release went.
func pausedChild() {
	ctx := context.Background()
	st, err := OpenStore(ctx, &Options{Endpoints: []string{os.Getenv("ETCD_PAUSED_EP")}, Prefix: os.Getenv("ETCD_PAUSED_PREFIX")},
		store.WithTimeout(10*time.Second))
	if err != nil {
		fmt.Println("error", err)
		return
	}
	defer st.Close()
	ns := store.Namespace{Name: "n", Limit: 1, Tolerance: 500 * time.Millisecond}
	l, err := st.Slots().Acquire(ctx, ns, "child", store.AcquireOptions{TTL: 2 * time.Second})
	for err == nil {
		fmt.Println("lease", l.Fence, l.Ceiling)
		time.Sleep(200 * time.Millisecond)
		l, err = st.Slots().Renew(ctx, l)
	}
	if !errors.Is(err, store.ErrLeaseLost) {
		fmt.Println("error", err)
		return
	}
	rerr := st.Slots().ReleaseUsed(ctx, l, l.Ceiling-1)
	if errors.Is(rerr, store.ErrLeaseLost) {
		fmt.Println("lost: renew:", err, "; release lost")
		return
	}
	fmt.Println("lost: renew:", err, "; release:", rerr)
}

// openLossyEvery opens a store on prefix whose client loses the answer of
// every nth transaction: the server applied it, the store hears
// Unavailable.
func openLossyEvery(t testing.TB, prefix string, nth int64, lost *atomic.Int64) *store.Store {
	t.Helper()
	var n atomic.Int64
	return openDriver(t, prefix, interceptCalls(func(ctx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err == nil && strings.HasSuffix(method, "/Txn") && n.Add(1)%nth == 0 {
			lost.Add(1)
			return status.Error(codes.Unavailable, "answer lost (test)")
		}
		return err
	}))
}

// TestSlotsLostAnswers: three stores whose transactions lose every 4th to
// 7th answer (applied, then retried) acquire, renew and release two slots
// from nine owners (slotWorkers): no two terms of a slot get the same
// fence or issue a common timestamp.
func TestSlotsLostAnswers(t *testing.T) {
	prefix := freshPrefix("lossyslots")
	var lost atomic.Int64
	stores := []*store.Store{openLossyEvery(t, prefix, 5, &lost), openLossyEvery(t, prefix, 7, &lost), openLossyEvery(t, prefix, 4, &lost)}
	deadline := time.Now().Add(8 * time.Second)
	terms := slotWorkers(t, stores, 3, func() bool { return time.Now().After(deadline) }, new(atomic.Int64))
	if lost.Load() == 0 {
		t.Fatal("no answer was lost")
	}
	t.Logf("%d answers lost", lost.Load())
	checkTerms(t, terms, 10)
}

// slotTerm is one term a worker held: the timestamps it issued are
// [first, issued]; first 0: none.
type slotTerm struct {
	slot          int
	fence         int64
	first, issued int64
}

// slotWorkers runs perStore workers on each store, each a distinct owner,
// until done: they acquire one of two slots (ttl 300ms), issue the host's
// time as timestamps within the term (at or above the floor, below the
// ceiling and the expiry), renew three times, and release with the
// highest timestamp issued. A failed Renew ends the issuing. It returns
// every term held, counted in held as they end.
func slotWorkers(t *testing.T, stores []*store.Store, perStore int, done func() bool, held *atomic.Int64) []slotTerm {
	ns := store.Namespace{Name: "n", Limit: 2, Tolerance: 50 * time.Millisecond}
	var mu sync.Mutex
	var terms []slotTerm
	var timeouts atomic.Int64
	var wg sync.WaitGroup
	for i, st := range stores {
		for j := range perStore {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := t.Context()
				owner := fmt.Sprintf("o%d-%d", i, j)
				for !done() {
					l, err := st.Slots().Acquire(ctx, ns, owner, store.AcquireOptions{TTL: 300 * time.Millisecond})
					if errors.Is(err, store.ErrExhausted) || errors.Is(err, context.DeadlineExceeded) {
						if !errors.Is(err, store.ErrExhausted) {
							timeouts.Add(1) // every retry lost its answer, or a fault
						}
						time.Sleep(20 * time.Millisecond)
						continue
					}
					if err != nil {
						t.Errorf("Acquire: %v", err)
						return
					}
					tm := slotTerm{slot: l.Slot, fence: l.Fence}
					for range 3 {
						now := time.Now().UnixMilli()
						if now >= l.ExpiresAt {
							break
						}
						if now >= l.Floor && now < l.Ceiling {
							if tm.first == 0 {
								tm.first = now
							}
							tm.issued = now
						}
						time.Sleep(30 * time.Millisecond)
						if l, err = st.Slots().Renew(ctx, l); err != nil {
							break // lost (taken over after a slow round) or unknown: stop issuing
						}
					}
					mu.Lock()
					terms = append(terms, tm)
					mu.Unlock()
					held.Add(1)
					if tm.first != 0 {
						st.Slots().ReleaseUsed(ctx, l, tm.issued)
					} else {
						st.Slots().Release(ctx, l)
					}
				}
			}()
		}
	}
	wg.Wait()
	t.Logf("%d terms, %d acquires out of time", len(terms), timeouts.Load())
	return terms
}

// checkTerms fails on a fence handed out twice for a slot, or two terms
// of a slot that issued a common timestamp; and on fewer than least terms.
func checkTerms(t *testing.T, terms []slotTerm, least int) {
	t.Helper()
	if len(terms) < least {
		t.Fatalf("only %d terms", len(terms))
	}
	fences := map[[2]int64]bool{}
	for i, a := range terms {
		k := [2]int64{int64(a.slot), a.fence}
		if fences[k] {
			t.Errorf("slot %d: fence %d handed out twice", a.slot, a.fence)
		}
		fences[k] = true
		for _, b := range terms[i+1:] {
			if a.slot == b.slot && a.first != 0 && b.first != 0 && a.first <= b.issued && b.first <= a.issued {
				t.Errorf("slot %d: terms of fence %d and %d both issued timestamps in [%d, %d] and [%d, %d]",
					a.slot, a.fence, b.fence, a.first, a.issued, b.first, b.issued)
			}
		}
	}
}

// TestRenewClockStepsBack: the holder's clock steps back 30s (an NTP
// correction) within a term: its renewals never lower the expiry or the
// ceiling; another store whose clock did not step takes the slot only
// once it expired, at or above its ceiling.
func TestRenewClockStepsBack(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("stepback")
	s := openShifted(t, prefix, 0)
	ns := driver.Namespace{Name: "n", Limit: 1, Tolerance: 200 * time.Millisecond}
	l, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "o", Incarnation: "i", TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s.now = func() int64 { return time.Now().Add(-30 * time.Second).UnixMilli() }
	for range 3 {
		l2, err := s.Renew(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		if l2.ExpiresAt < l.ExpiresAt || l2.Ceiling < l.Ceiling || l2.Fence != l.Fence || l2.Floor != l.Floor {
			t.Fatalf("Renew with the clock 30s back: %+v after %+v", l2, l)
		}
		l = l2
	}
	other := openShifted(t, prefix, 0)
	req := driver.AcquireRequest{Namespace: ns, Owner: "p", Incarnation: "j", TTL: time.Second}
	if l3, err := other.Acquire(ctx, req); !errors.Is(err, driver.ErrExhausted) {
		t.Fatalf("another store took the live term: %+v, %v", l3, err)
	}
	var l3 driver.Lease
	poll.Succeeds(t, 30*time.Second, "the other store takes the expired slot", func() error {
		var err error
		l3, err = other.Acquire(ctx, req)
		return err
	})
	if now := time.Now().UnixMilli(); l3.Fence != l.Fence+1 || l3.Floor < l.Ceiling || now < l.ExpiresAt {
		t.Errorf("taken at %d: %+v; the old term expired at %d, ceiling %d", now, l3, l.ExpiresAt, l.Ceiling)
	}
}

// oHolds opens a store on a fresh prefix named after what, in which owner
// o holds a slot of namespace n (two slots) for a minute.
func oHolds(t *testing.T, what string) (s *driverStore, prefix string, ns driver.Namespace, l driver.Lease) {
	t.Helper()
	prefix = freshPrefix(what)
	s = openShifted(t, prefix, 0)
	ns = driver.Namespace{Name: "n", Limit: 2, Tolerance: time.Millisecond}
	l, err := s.Acquire(t.Context(), driver.AcquireRequest{Namespace: ns, Owner: "o", Incarnation: "i", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return s, prefix, ns, l
}

// TestNamespaceDeletedByHand: an operator deletes a namespace's keys (its
// settings, slots and owner indexes) while a store that used it runs:
// that store's Acquire refuses (ErrCorrupt) rather than start its slots
// again at fence 1 and floor 0, and writes nothing; its Renew of the
// term it held is ErrLeaseLost.
func TestNamespaceDeletedByHand(t *testing.T) {
	ctx := t.Context()
	s, prefix, ns, l := oHolds(t, "nsdel")
	cli := rawClient(t)
	for _, p := range []string{"/ns/n", "/slot/n/", "/owner/n/"} {
		if _, err := cli.Delete(ctx, prefix+p, clientv3.WithPrefix()); err != nil {
			t.Fatal(err)
		}
	}
	l2, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "p", Incarnation: "j", TTL: time.Minute})
	if !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("Acquire after the namespace was deleted by hand: %+v, %v; want ErrCorrupt", l2, err)
	}
	if resp, err := cli.Get(ctx, prefix+"/slot/n/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Errorf("the refused Acquire wrote %d slot keys (%v)", resp.Count, err)
	}
	if _, err := s.Renew(ctx, l); !errors.Is(err, driver.ErrLeaseLost) {
		t.Errorf("Renew of the term whose key was deleted: %v; want ErrLeaseLost", err)
	}
}

// TestAcquireRacesPurge: a purge lands between an Acquire's first read
// (the namespace, the owner index and the purged fence floor) and its
// read of the slots: the slot it finds missing was deleted by that purge,
// whose floor is its old fence. The new term's fence must be above it,
// not the purged fence again (a fresh owner's write compares no key the
// purge changed but the slot's, which is missing either way).
func TestAcquireRacesPurge(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("acqpurge")
	ns := driver.Namespace{Name: "n", Limit: 1, Tolerance: time.Millisecond}
	x := openShifted(t, prefix, 0)
	l, err := x.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "x", Incarnation: "1", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Release(ctx, l, l.Floor); err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	a := openBeforeTxn(t, prefix, &armed, 2, func() {
		// The Acquire's second read: purge first.
		if deleted, err := x.Purge(ctx); err != nil {
			t.Errorf("Purge: %v", err)
		} else {
			t.Logf("purged %q", deleted)
		}
	})
	armed.Store(true)
	l2, err := a.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "new", Incarnation: "1", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if l2.Fence <= l.Fence {
		t.Errorf("the term after the purge of fence %d got fence %d", l.Fence, l2.Fence)
	}
	if nss, err := a.Namespaces(ctx); err != nil || len(nss) != 1 {
		t.Errorf("after the Acquire: namespaces %v, %v; want n (a slot without its namespace otherwise)", nss, err)
	}
}

// TestSeedRacesPurge: between a SeedSlot's read (the slot missing, never
// used) and its write, another store takes and releases the slot (fence 1)
// and purges: the seeded record must not bring the slot back below the
// purged fence, so the next term's fence is above 1.
func TestSeedRacesPurge(t *testing.T) {
	ctx := t.Context()
	// The seed's write: a term and a purge first.
	a, x, ns := purgedBeforeWrite(t, "seedpurge", "the seed")
	if err := a.SeedSlot(ctx, ns, 0, 0, 100); err != nil {
		t.Fatal(err)
	}
	l, err := x.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "y", Incarnation: "1", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if l.Fence <= 1 || l.Floor < 100 {
		t.Errorf("the term after the seed (next floor 100) and the purge of fence 1: fence %d, floor %d", l.Fence, l.Floor)
	}
}

// TestSlotsThroughClusterFaults: slotWorkers on three stores of a 3-member
// cluster (each through proxies to every member) while their connections
// are cut with requests in flight, the leader is killed and restarted, and
// a member is paused: no fence twice, no common timestamp of two terms.
func TestSlotsThroughClusterFaults(t *testing.T) {
	c := etcdtest.Start(t, 3)
	prefix := freshPrefix("slotfaults")
	stores, proxies := proxiedStores(t, c, prefix, 2*time.Second)
	var stop atomic.Bool
	var held atomic.Int64
	done := make(chan []slotTerm, 1)
	go func() { done <- slotWorkers(t, stores, 2, stop.Load, &held) }()
	progress := func(what string) {
		t.Helper()
		n := held.Load()
		poll.Until(t, 60*time.Second, "terms end after "+what, func() bool { return held.Load() > n+5 })
	}
	progress("the start")
	for i, p := range proxies {
		p.Cut()
		time.Sleep(50 * time.Millisecond) // let requests pile up on the dead connections
		p.Restore()
		progress(fmt.Sprintf("cut %d", i))
	}
	leader, _ := pickMember(t, c, true)
	leader.Stop()
	progress("the leader was killed")
	c.Restart(t, leader)
	follower, _ := pickMember(t, c, false)
	follower.Pause()
	progress("a member was paused")
	follower.Resume()
	progress("the member came back")
	stop.Store(true)
	checkTerms(t, <-done, 10)
}

// TestPurgeUndecodableSlot: a slot record this release cannot read (a
// newer version's, or damaged) holds a fence and maybe a live term the
// purge cannot see: Purge refuses (ErrCorrupt naming the key) and deletes
// nothing, rather than delete it without keeping its fence.
func TestPurgeUndecodableSlot(t *testing.T) {
	ctx := t.Context()
	s, prefix, _, l := oHolds(t, "purgecorrupt")
	cli := rawClient(t)
	if err := s.Release(ctx, l, l.Floor); err != nil {
		t.Fatal(err)
	}
	// A newer release's record of slot 1: version 2, fence 50 somewhere in it.
	newer := "\x02\x01o\x01i\x00\x64rest-of-a-newer-record"
	if _, err := cli.Put(ctx, prefix+"/slot/n/1", newer); err != nil {
		t.Fatal(err)
	}
	before, err := cli.Get(ctx, prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	deleted, err := s.Purge(ctx)
	if !errors.Is(err, driver.ErrCorrupt) || !strings.Contains(fmt.Sprint(err), prefix+"/slot/n/1") {
		t.Errorf("Purge with an undecodable slot record: deleted %q, %v; want ErrCorrupt naming the key", deleted, err)
	}
	after, err := cli.Get(ctx, prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if after.Count != before.Count {
		t.Errorf("the refused Purge changed the keys: %d before, %d after", before.Count, after.Count)
	}
}

// TestAcquireRacesPurgeNewNamespace: as TestAcquireRacesPurge, for an
// Acquire that found the namespace missing (so it reads no slot and
// creates the namespace with its write): between its first read and its
// write, another store creates the namespace, takes and releases slot 0
// (fence 1) and purges. The write must not bring slot 0 back at fence 1.
func TestAcquireRacesPurgeNewNamespace(t *testing.T) {
	ctx := t.Context()
	// The Acquire's write: a term and a purge first.
	a, _, ns := purgedBeforeWrite(t, "acqpurgens", "the Acquire")
	l, err := a.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "new", Incarnation: "1", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if l.Fence <= 1 {
		t.Errorf("the term after the purge of fence 1 got fence %d", l.Fence)
	}
}

// purgedBeforeWrite opens a store on a fresh prefix named after what
// whose second transaction (the write of a call that read first) is
// preceded by another store's (x's) term on slot 0 of namespace n and a
// purge (termThenPurge, during names the call); the hook runs once.
func purgedBeforeWrite(t *testing.T, what, during string) (a, x *driverStore, ns driver.Namespace) {
	t.Helper()
	prefix := freshPrefix(what)
	ns = driver.Namespace{Name: "n", Limit: 1, Tolerance: time.Millisecond}
	x = openShifted(t, prefix, 0)
	var armed atomic.Bool
	a = openBeforeTxn(t, prefix, &armed, 2, func() { termThenPurge(t, x, ns, during) })
	armed.Store(true)
	return a, x, ns
}

// termThenPurge has x take and release a slot of ns, then purge, during
// another store's call (during names it).
func termThenPurge(t *testing.T, x *driverStore, ns driver.Namespace, during string) {
	ctx := t.Context()
	l, err := x.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "x", Incarnation: "1", TTL: time.Minute})
	if err == nil {
		err = x.Release(ctx, l, l.Floor)
	}
	if err == nil {
		_, err = x.Purge(ctx)
	}
	if err != nil {
		t.Errorf("the term and purge during %s: %v", during, err)
	}
}

// An Acquire that finds no free slot because one is unusable (its key
// does not decode) says so, naming the key and the reason once, rather
// than calling every slot held: the operator repairs that one, where a
// held slot only waits for its term.
func TestExhaustedNamesUnusableSlots(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("unusable")
	s := openShifted(t, prefix, 0)
	ns := driver.Namespace{Name: "n", Limit: 2, Tolerance: time.Millisecond}
	held, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "i", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	bad := prefix + "/slot/n/" + map[int]string{0: "1", 1: "0"}[held.Slot]
	if _, err := rawClient(t).Put(ctx, bad, "not a slot record"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "b", Incarnation: "i", TTL: time.Minute})
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if !errors.Is(err, driver.ErrExhausted) || !strings.Contains(msg, "passed over 1 unusable") ||
		!strings.Contains(msg, bad) || strings.Count(msg, driver.ErrCorrupt.Error()) != 1 {
		t.Errorf("Acquire with slot %d held and %s not a record: %v; want ErrExhausted saying it passed over 1 unusable, "+
			"naming the key and %q once", held.Slot, bad, err, driver.ErrCorrupt.Error())
	}
}
