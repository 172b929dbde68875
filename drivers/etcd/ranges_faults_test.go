package etcd

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/etcdtest"
	"github.com/cosid-go/store/internal/testing/poll"
)

// TestInitAfterOperatorDelete: a store that handed out values of a key
// which an operator then deleted refuses an Init of it (a program that
// calls Init at every start would otherwise create the key again at its
// first value, and the same store would hand out those values twice).
func TestInitAfterOperatorDelete(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("initdel")
	s := openShifted(t, prefix, 0)
	if err := s.Init(ctx, "k", 100); err != nil {
		t.Fatal(err)
	}
	first, err := s.Next(ctx, "k", 10)
	if err != nil || first != 100 {
		t.Fatalf("Next = %d, %v; want 100", first, err)
	}
	if _, err := rawClient(t).Delete(ctx, prefix+"/range/k"); err != nil {
		t.Fatal(err)
	}
	err = s.Init(ctx, "k", 100)
	if !errors.Is(err, driver.ErrRecreated) {
		t.Errorf("Init of a key this store used, now deleted: %v; want ErrRecreated", err)
	}
	if again, err := s.Next(ctx, "k", 10); err == nil {
		t.Errorf("Next after the Init handed out %d again (first was %d)", again, first)
	}
	resp, err := rawClient(t).Get(ctx, prefix+"/range/k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 {
		t.Errorf("the refused Init created the key again: %q", resp.Kvs[0].Value)
	}
}

// TestNextThroughClusterFaults: on a 3-member cluster, three stores (each
// through proxies to every member) call Next on one key while their
// connections are cut with requests in flight, the leader is killed and
// restarted, and a member is paused; then, once every member answers
// again, one store seals the key while the others' Next calls go on. No
// value is handed out twice, every range is below the sealed value, and
// Next after the seal is ErrSealed in every store.
func TestNextThroughClusterFaults(t *testing.T) {
	c := etcdtest.Start(t, 3)
	ctx := t.Context()
	prefix := freshPrefix("faults")
	stores, proxies := proxiedStores(t, c, prefix, 3*time.Second)
	var mu sync.Mutex
	var got []store.Range
	var failed int
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// The callers end before the checks, and before the test does if it
	// fails first (their calls would go on against closed stores).
	stopCallers := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopCallers()
	for _, st := range stores {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					r, err := st.Ranges().Next(ctx, "k", 5)
					mu.Lock()
					if err == nil {
						got = append(got, r)
					} else {
						failed++
					}
					mu.Unlock()
				}
			}()
		}
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}
	progress := func(what string) {
		t.Helper()
		n := count()
		poll.Until(t, 60*time.Second, "Next succeeds after "+what, func() bool { return count() > n+20 })
	}
	progress("the start")
	for round := range 2 {
		for i, p := range proxies {
			p.Cut()
			time.Sleep(50 * time.Millisecond) // let requests pile up on the dead connections
			p.Restore()
			progress(fmt.Sprintf("cut %d of round %d", i, round))
		}
		leader, _ := pickMember(t, c, true)
		leader.Stop()
		progress("the leader was killed")
		c.Restart(t, leader)
		progress("the old leader restarted")
		follower, _ := pickMember(t, c, false)
		follower.Pause()
		progress("a member was paused")
		follower.Resume()
	}
	waitHealed(t, c)
	progress("the cluster healed")
	// The Seal races six callers of Next on the key, each retry a fair
	// compare-and-set against theirs: on a loaded machine it can run out
	// of the store's 3s. Sealing twice is harmless, and a Seal that ran
	// out of time may or may not have applied: it is retried until one
	// succeeds, whose answer is the sealed value either way. Nothing below
	// runs on a Seal that failed.
	var final int64
	poll.Succeeds(t, 2*time.Minute, "Seal of k", func() error {
		var err error
		final, err = stores[0].Ranges().Seal(ctx, "k")
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("Seal: %v", err)
		}
		if err != nil {
			t.Logf("Seal: %v (sent again)", err)
		}
		return err
	})
	stopCallers()
	t.Logf("%d ranges, %d failed calls, sealed at %d", len(got), failed, final)
	sort.Slice(got, func(i, j int) bool { return got[i].Start < got[j].Start })
	for i, r := range got {
		if i > 0 && r.Start < got[i-1].End {
			t.Fatalf("ranges %v and %v overlap", got[i-1], r)
		}
		if r.End > final {
			t.Fatalf("range %v is not below the sealed value %d", r, final)
		}
	}
	for i, st := range stores {
		if r, err := st.Ranges().Next(ctx, "k", 5); !errors.Is(err, store.ErrSealed) {
			t.Errorf("store %d: Next after the seal = %v, %v; want ErrSealed", i, r, err)
		}
	}
}

// waitHealed polls until every member of c answers, all naming one
// leader: the faults are over, and none is still electing or catching up
// on a leader it lost.
func waitHealed(t *testing.T, c *etcdtest.Cluster) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	poll.Succeeds(t, 60*time.Second, "every member answers, naming one leader", func() error {
		var leader uint64
		for _, m := range c.Members {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			st, err := cli.Status(ctx, m.ClientURL)
			cancel()
			if err != nil {
				return fmt.Errorf("member %s: %w", m.Name, err)
			}
			if st.Leader == 0 || (leader != 0 && st.Leader != leader) {
				return fmt.Errorf("member %s names leader %x, another %x", m.Name, st.Leader, leader)
			}
			leader = st.Leader
		}
		return nil
	})
}

// TestOddDataLeftAlone: values another tool (or another version) wrote in
// a range key, a namespace key or an owner index are refused with
// ErrCorrupt by every call that reads them, whether or not the store used
// the key before, and are left as they are.
func TestOddDataLeftAlone(t *testing.T) {
	ctx := t.Context()
	cli := rawClient(t)
	for _, v := range []string{"", "0100", "+5", "-1", " 5", "5 ", "5\n", "1e3", "0x10", "５", "5:sealed:sealed",
		"5:SEALED", ":sealed", "9223372036854775808", "5:sealedx", "5;sealed"} {
		for _, used := range []bool{false, true} {
			prefix := freshPrefix("odd")
			s := openShifted(t, prefix, 0)
			k := prefix + "/range/k"
			if used {
				if _, err := s.Next(ctx, "k", 10); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := cli.Put(ctx, k, v); err != nil {
				t.Fatal(err)
			}
			calls := map[string]func() error{
				"Next":    func() error { _, err := s.Next(ctx, "k", 10); return err },
				"Current": func() error { _, _, err := s.Current(ctx, "k"); return err },
				"Seal":    func() error { _, err := s.Seal(ctx, "k"); return err },
				"Init":    func() error { return s.Init(ctx, "k", 5) },
			}
			for name, call := range calls {
				if err := call(); !errors.Is(err, driver.ErrCorrupt) {
					t.Errorf("%s of a key holding %q (used before: %v): %v; want ErrCorrupt", name, v, used, err)
				}
			}
			resp, err := cli.Get(ctx, k)
			if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != v {
				t.Errorf("the key holding %q now: %v, %v", v, resp.Kvs, err)
			}
		}
	}
	prefix := freshPrefix("oddslot")
	s := openShifted(t, prefix, 0)
	ns := driver.Namespace{Name: "n", Limit: 4, Tolerance: time.Second}
	for key, v := range map[string]string{
		"ns/n":      "limit=4\ntolerance=1000\n",
		"owner/n/o": "1, 2",
	} {
		if _, err := cli.Put(ctx, prefix+"/"+key, v); err != nil {
			t.Fatal(err)
		}
		_, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "o", Incarnation: "i", TTL: time.Minute})
		if !errors.Is(err, driver.ErrCorrupt) {
			t.Errorf("Acquire with %s holding %q: %v; want ErrCorrupt", key, v, err)
		}
		resp, err := cli.Get(ctx, prefix+"/"+key)
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != v {
			t.Errorf("%s holding %q now: %v, %v", key, v, resp.Kvs, err)
		}
		if _, err := cli.Delete(ctx, prefix+"/"+key); err != nil {
			t.Fatal(err)
		}
	}
	// A slot record that does not decode: passed over by Acquire, named in
	// its ErrExhausted; Slots refuses it; it stays as it is.
	if _, err := cli.Put(ctx, prefix+"/slot/n/0", "\x00garbage"); err != nil {
		t.Fatal(err)
	}
	one := driver.Namespace{Name: "n", Limit: 1, Tolerance: time.Second}
	if _, err := cli.Put(ctx, prefix+"/ns/n", "limit=1\ntolerance=1000"); err != nil {
		t.Fatal(err)
	}
	_, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: one, Owner: "o", Incarnation: "i", TTL: time.Minute})
	if !errors.Is(err, driver.ErrExhausted) || !strings.Contains(err.Error(), "slot/n/0") {
		t.Errorf("Acquire with the only slot corrupt: %v; want ErrExhausted naming it", err)
	}
	if _, err := s.Slots(ctx, "n"); !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("Slots with a corrupt slot: %v; want ErrCorrupt", err)
	}
	if resp, err := cli.Get(ctx, prefix+"/slot/n/0"); err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "\x00garbage" {
		t.Errorf("the corrupt slot now: %v, %v", resp.Kvs, err)
	}
}

// TestNestedPrefixes: a store whose prefix lies under another's ("/p" and
// "/p/x") is a separate store: each key starts at 0 in each, and neither
// lists the other's keys. A prefix inside another store's lock, namespace,
// slot, owner or range keys ("/p/lock/n") would put its keys among entries
// the other reads as its own (a lock nobody holds would stay taken; range
// keys that both hand out, TestNestedRangeStore): Open refuses it, naming
// the store.
func TestNestedPrefixes(t *testing.T) {
	ctx := t.Context()
	ep := sharedServer(t).Endpoints()
	outer := freshPrefix("nested")
	a, err := OpenStore(ctx, &Options{Endpoints: ep, Prefix: outer})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenStore(ctx, &Options{Endpoints: ep, Prefix: outer + "/x"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, st := range []*store.Store{a, b, a, b} {
		if _, err := st.Ranges().Next(ctx, "k", 10); err != nil {
			t.Fatal(err)
		}
	}
	for i, st := range []*store.Store{a, b} {
		if next, _, err := st.Ranges().Current(ctx, "k"); err != nil || next != 20 {
			t.Errorf("store %d: Current = %d, %v; want 20 (two Next of 10 each)", i, next, err)
		}
		if keys, err := st.Ranges().Keys(ctx); err != nil || len(keys) != 1 || keys[0] != "k" {
			t.Errorf("store %d: Keys = %q, %v; want [k]", i, keys, err)
		}
	}
	for _, inner := range []string{"/lock/n", "/slot/ns", "/ns", "/owner/ns", "/range", "/range/k"} {
		c, err := OpenStore(ctx, &Options{Endpoints: ep, Prefix: outer + inner})
		if err == nil {
			c.Close()
			t.Errorf("Open of %s%s, inside the store at %s: no error", outer, inner, outer)
		} else if !errors.Is(err, store.ErrConfigMismatch) || !strings.Contains(err.Error(), outer+"/meta") {
			t.Errorf("Open of %s%s, inside the store at %s: %v; want ErrConfigMismatch naming %s/meta", outer, inner, outer, err, outer)
		}
	}
	l, err := a.Locks().TryLock(ctx, "n")
	if err != nil {
		t.Fatalf("TryLock of a lock nobody holds: %v", err)
	}
	l.Unlock(ctx)
}

// TestNextAcrossCompaction: the revisions a store remembers of its keys
// are compacted away (and other keys written meanwhile); Next, Current
// and Seal go on from the values they had, Next in one round trip.
func TestNextAcrossCompaction(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("compactrange")
	st, calls := openCounting(t, prefix)
	cli := rawClient(t)
	for _, k := range []string{"a", "b"} {
		if _, err := st.Ranges().Next(ctx, k, 10); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx, prefix+"/range/b", "50"); err != nil { // another store's write
		t.Fatal(err)
	}
	resp, err := cli.Put(ctx, prefix+"/churn", "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	before := calls.Load()
	if r, err := st.Ranges().Next(ctx, "a", 10); err != nil || r.Start != 10 {
		t.Errorf("Next of a after the compaction = %v, %v; want start 10", r, err)
	}
	if n := calls.Load() - before; n != 1 {
		t.Errorf("Next after the compaction made %d round trips, want 1", n)
	}
	if r, err := st.Ranges().Next(ctx, "b", 10); err != nil || r.Start != 50 {
		t.Errorf("Next of b after another write and the compaction = %v, %v; want start 50", r, err)
	}
	if next, err := st.Ranges().Seal(ctx, "a"); err != nil || next != 20 {
		t.Errorf("Seal of a = %d, %v; want 20", next, err)
	}
}

// TestInitRacesNext: one store Inits keys at 1000 while another calls Next
// on them: either the Init wins and every range is at or above 1000, or
// the Next created the key first and the Init says ErrConfigMismatch;
// never an Init that succeeded over a range handed out from 0.
func TestInitRacesNext(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("initrace")
	a, b := openShifted(t, prefix, 0), openShifted(t, prefix, 0)
	var inits, nexts int
	for i := range 40 {
		k := fmt.Sprintf("k%d", i)
		var initErr error
		var got []int64
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); initErr = a.Init(ctx, k, 1000) }()
		go func() {
			defer wg.Done()
			for range 3 {
				start, err := b.Next(ctx, k, 10)
				if err != nil {
					t.Errorf("Next: %v", err)
					return
				}
				got = append(got, start)
			}
		}()
		wg.Wait()
		switch {
		case initErr == nil:
			inits++
			if got[0] < 1000 {
				t.Errorf("%s: Init at 1000 succeeded, and Next handed out %v", k, got)
			}
		case errors.Is(initErr, driver.ErrConfigMismatch):
			nexts++
			if got[0] != 0 {
				t.Errorf("%s: Init refused, and the first range was at %d, not 0", k, got[0])
			}
		default:
			t.Errorf("%s: Init: %v", k, initErr)
		}
	}
	t.Logf("Init first: %d, Next first: %d", inits, nexts)
}

// TestNestedPrefixCreatedFirst: the other order of TestNestedPrefixes: a
// store at /p/lock/n exists first, then a store is created at /p, whose
// lock n would then stay taken for as long as the inner store exists
// (its keys read as waiters). The creation is refused, naming the key;
// without the inner store it goes through.
func TestNestedPrefixCreatedFirst(t *testing.T) {
	ctx := t.Context()
	ep := sharedServer(t).Endpoints()
	outer := freshPrefix("nestedfirst")
	inner, err := OpenStore(ctx, &Options{Endpoints: ep, Prefix: outer + "/lock/n"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := OpenStore(ctx, &Options{Endpoints: ep, Prefix: outer})
	if err == nil {
		l, lerr := a.Locks().TryLock(ctx, "n")
		if lerr == nil {
			l.Unlock(ctx)
		}
		a.Close()
		t.Fatalf("a store created around another's: no error (its TryLock of lock n: %v)", lerr)
	}
	if !errors.Is(err, store.ErrConfigMismatch) || !strings.Contains(err.Error(), outer+"/lock/n/meta") {
		t.Errorf("a store created around another's: %v; want ErrConfigMismatch naming %s/lock/n/meta", err, outer)
	}
	inner.Close()
	if _, err := rawClient(t).Delete(ctx, outer+"/lock/n/", clientv3.WithPrefix()); err != nil { // the inner store is gone
		t.Fatal(err)
	}
	if a, err = OpenStore(ctx, &Options{Endpoints: ep, Prefix: outer}); err != nil {
		t.Fatalf("Open once the inner store is gone: %v", err)
	}
	a.Close()
}

// TestFirstNextAcrossRecreation: two calls of one store use a key for the
// first time; the first call's transaction is held back while the second
// creates the key and gets [0, 10), and an operator deletes the key and
// creates it again at 0. The first call, answered then, must not take the
// recreated key for a new one (it would hand out [0, 10) again): it sees
// a create revision other than the one its store remembers.
func TestFirstNextAcrossRecreation(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("firstnext")
	var armed atomic.Bool
	hold, held := make(chan struct{}), make(chan struct{})
	s := openBeforeTxn(t, prefix, &armed, 1, func() {
		close(held)
		<-hold
	})
	armed.Store(true)
	type result struct {
		start int64
		err   error
	}
	first := make(chan result, 1)
	go func() {
		start, err := s.Next(ctx, "k", 10)
		first <- result{start, err}
	}()
	<-held
	second, err := s.Next(ctx, "k", 10)
	if err != nil || second != 0 {
		t.Fatalf("the second call's Next = %d, %v; want 0", second, err)
	}
	cli := rawClient(t)
	if _, err := cli.Delete(ctx, prefix+"/range/k"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, prefix+"/range/k", "0"); err != nil {
		t.Fatal(err)
	}
	close(hold)
	r := <-first
	if r.err == nil && r.start < 10 {
		t.Errorf("the first call's Next handed out [%d, %d) again (the second call had [0, 10))", r.start, r.start+10)
	}
	if r.err != nil && !errors.Is(r.err, driver.ErrRecreated) {
		t.Errorf("the first call's Next: %v; want ErrRecreated", r.err)
	}
}
