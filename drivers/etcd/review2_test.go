package etcd

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/etcdtest"
	"github.com/cosid-go/store/internal/netproxy"
	"github.com/cosid-go/store/internal/poll"
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
// restarted, and a member is paused; then one store seals the key. No value
// is handed out twice, every range is below the sealed value, and Next
// after the seal is ErrSealed in every store.
func TestNextThroughClusterFaults(t *testing.T) {
	c := etcdtest.Start(t, 3)
	ctx := t.Context()
	prefix := freshPrefix("faults")
	var proxies []*netproxy.Proxy
	var eps []string
	for _, m := range c.Members {
		p := netproxy.New(t, strings.TrimPrefix(m.ClientURL, "http://"))
		proxies = append(proxies, p)
		eps = append(eps, p.Addr())
	}
	var stores []*store.Store
	for i := range 3 {
		// Each store prefers another member first.
		order := append(append([]string(nil), eps[i:]...), eps[:i]...)
		st, err := store.Open("etcd", map[string]string{"endpoints": strings.Join(order, ","), "prefix": prefix, "dialTimeout": "1s"},
			store.WithTimeout(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		stores = append(stores, st)
	}
	var mu sync.Mutex
	var got []store.Range
	var failed int
	stop := make(chan struct{})
	var wg sync.WaitGroup
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
	for round := range 3 {
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
	final, err := stores[0].Ranges().Seal(ctx, "k")
	if err != nil {
		t.Errorf("Seal: %v", err)
		final = math.MaxInt64
	}
	close(stop)
	wg.Wait()
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
// slot or owner keys ("/p/lock/n") would put its keys among entries the
// other reads as its own (a lock nobody holds would stay taken): Open
// refuses it, naming the store.
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
	for _, inner := range []string{"/lock/n", "/slot/ns", "/ns", "/owner/ns"} {
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
