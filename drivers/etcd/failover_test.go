package etcd

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/etcdtest"
	"github.com/cosid-go/store/internal/testing/netproxy"
	"github.com/cosid-go/store/internal/testing/poll"
)

var failoverKills = flag.Int("failover.kills", 2, "TestFailoverStall: leader kills (and as many paused followers) to measure")

// TestFailoverStall measures how long writes stall when the leader of a
// 3-member cluster is killed, and when a follower is paused, against how
// long the cluster takes to elect a new leader: writers call Next in a
// loop through two stores on every member (store timeout 3s), and each
// fault's stall is the time from the fault until every writer has
// completed a write after it. It prints the stalls and their median; it asserts
// only what must hold whatever the timing: writes resume after each
// fault, and no value is handed out twice.
//
//	go test -count=1 -run TestFailoverStall -v -failover.kills 10 ./
func TestFailoverStall(t *testing.T) {
	c := etcdtest.Start(t, 3)
	prefix := freshPrefix("failover")
	open := func() *store.Store {
		st, err := store.Open("etcd", map[string]string{"endpoints": joinEndpoints(c), "prefix": prefix}, store.WithTimeout(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	stores := []*store.Store{open(), open()}

	var mu sync.Mutex
	var ok [][]time.Time // per writer, the completion of each successful Next
	got := map[string][]store.Range{}
	var failed int
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, st := range stores {
		for w := range 2 {
			wg.Add(1)
			me := len(ok)
			ok = append(ok, nil)
			go func() {
				defer wg.Done()
				key := fmt.Sprintf("k%d", w)
				for {
					select {
					case <-stop:
						return
					default:
					}
					r, err := st.Ranges().Next(context.Background(), key, 10)
					now := time.Now()
					mu.Lock()
					if err == nil {
						ok[me] = append(ok[me], now)
						got[key] = append(got[key], r)
					} else {
						failed++
					}
					mu.Unlock()
				}
			}()
		}
	}
	// resumed waits until every writer has completed a write after from,
	// and returns when the last one did.
	resumed := func(what string, from time.Time) time.Time {
		var at time.Time
		poll.Until(t, 60*time.Second, "a write of every writer after "+what, func() bool {
			mu.Lock()
			defer mu.Unlock()
			at = time.Time{}
			for _, w := range ok {
				i := sort.Search(len(w), func(i int) bool { return !w[i].Before(from) })
				if i == len(w) {
					return false
				}
				if w[i].After(at) {
					at = w[i]
				}
			}
			return true
		})
		return at
	}
	resumed("the start", time.Now())

	var stalls, elections []time.Duration
	var pauseStalls []time.Duration
	for i := range *failoverKills {
		leader, _ := pickMember(t, c, true)
		killed := time.Now()
		leader.Stop()
		elected := awaitLeader(t, c, leader, killed)
		at := resumed("a leader kill", killed)
		stalls = append(stalls, at.Sub(killed))
		elections = append(elections, elected)
		t.Logf("kill %d: new leader after %v, writes resumed after %v", i, elected.Round(time.Millisecond), at.Sub(killed).Round(time.Millisecond))
		c.Restart(t, leader)
		resumed("the restart", time.Now())

		follower, _ := pickMember(t, c, false)
		paused := time.Now()
		follower.Pause()
		at = resumed("a paused follower", paused)
		pauseStalls = append(pauseStalls, at.Sub(paused))
		t.Logf("pause %d: writes resumed after %v", i, at.Sub(paused).Round(time.Millisecond))
		follower.Resume()
		resumed("the resume", time.Now())
	}
	close(stop)
	wg.Wait()

	median := func(ds []time.Duration) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return ds[len(ds)/2].Round(time.Millisecond)
	}
	t.Logf("FAILOVER %d leader kills: median election %v, median write stall %v (max %v); %d paused followers: median stall %v (max %v); %d writes, %d failed",
		len(stalls), median(elections), median(stalls), slices.Max(stalls).Round(time.Millisecond),
		len(pauseStalls), median(pauseStalls), slices.Max(pauseStalls).Round(time.Millisecond), countRanges(got), failed)

	for key, rs := range got {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Start < rs[j].Start })
		for i := 1; i < len(rs); i++ {
			if rs[i].Start < rs[i-1].End {
				t.Errorf("key %s: values handed out twice: %v and %v", key, rs[i-1], rs[i])
			}
		}
	}
}

func joinEndpoints(c *etcdtest.Cluster) string {
	s := ""
	for i, e := range c.Endpoints() {
		if i > 0 {
			s += ","
		}
		s += e
	}
	return s
}

// awaitLeader returns how long after since a member other than old
// reports itself leader.
func awaitLeader(t *testing.T, c *etcdtest.Cluster, old *etcdtest.Member, since time.Time) time.Duration {
	t.Helper()
	var eps []string
	for _, m := range c.Members {
		if m != old {
			eps = append(eps, m.ClientURL)
		}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	var at time.Duration
	poll.Until(t, 60*time.Second, "a new leader", func() bool {
		for _, ep := range eps {
			ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
			st, err := cli.Status(ctx, ep)
			cancel()
			if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
				at = time.Since(since)
				return true
			}
		}
		return false
	})
	return at
}

func countRanges(m map[string][]store.Range) int {
	n := 0
	for _, rs := range m {
		n += len(rs)
	}
	return n
}

// TestFrozenMemberCostsOneAttempt: with one member of three behind a
// frozen proxy (it holds every byte, as a hung member or a network that
// drops everything), Nexts through a store on all three, whose timeout is
// long, go on through the others: a round trip to the frozen one is cut
// at its attempt deadline and retried on another member, instead of
// waiting for the connection to close; so do Seal, Advance, and a slot's
// Acquire, Renew and Release. The store's keepalive is off, so nothing
// but the attempt deadline can end a round trip to the frozen member:
// without it the sequence never ends (its guard, minutes, is against
// that hang, not a speed). Counted, not timed: every round trip the
// frozen member got ended unanswered while its call went on (cut), and no
// request was sent to it twice (a cut one goes to another member), unless
// cuts on the live members, slow on a loaded machine, brought the
// balancer's turn round to it again.
// Thawed, the held writes reach the member late and are applied or not:
// none hands out a value twice.
func TestFrozenMemberCostsOneAttempt(t *testing.T) {
	const guard = 5 * time.Minute
	c := etcdtest.Start(t, 3)
	proxy := netproxy.New(t, strings.TrimPrefix(c.Members[0].ClientURL, "http://"))
	eps := []string{proxy.Addr(), c.Members[1].ClientURL, c.Members[2].ClientURL}
	trips := &memberTrips{frozen: proxy.Addr(), reqs: map[any]*reqTrips{}}
	st := openDriverOn(t, eps, freshPrefix("frozenmember"), func(d *driverStore) {
		d.dialOpt = []grpc.DialOption{
			grpc.WithChainUnaryInterceptor(trips.intercept),
			noKeepalive,
		}
	}, store.WithTimeout(time.Hour))
	var got []store.Range
	next := func() error {
		r, err := st.Ranges().Next(context.Background(), "k", 10)
		if err == nil {
			got = append(got, r)
		}
		return err
	}
	for range 6 {
		if err := next(); err != nil {
			t.Fatal(err)
		}
	}
	proxy.Freeze()
	trips.count(true)
	done := make(chan error, 1)
	go func() {
		for range 30 {
			if err := next(); err != nil {
				done <- fmt.Errorf("Next: %w", err)
				return
			}
		}
		done <- frozenOthers(st)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("with one member of three frozen: %v", err)
		}
	case <-time.After(guard):
		t.Fatalf("30 Nexts, a Seal, an Advance and a slot's Acquire, Renews and Release with one member of three frozen: "+
			"not done after %v, a hang (%s): a round trip to the frozen member is not cut, and its connection never closes",
			guard, trips.summary())
	}
	trips.count(false)
	t.Logf("with one member frozen: %s", trips.summary())
	trips.check(t)
	proxy.Thaw()
	for range 6 {
		if err := next(); err != nil {
			t.Fatal(err)
		}
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Start < got[j].Start })
	for i := 1; i < len(got); i++ {
		if got[i].Start < got[i-1].End {
			t.Errorf("values handed out twice: %v and %v", got[i-1], got[i])
		}
	}
	t.Logf("%d ranges; last %v", len(got), got[len(got)-1])
}

// memberTrips counts a store's round trips while on, each attempt of a
// request (clientv3 sends a cut one again, the same request), by whether
// they went to the frozen member, its address, and how they ended.
type memberTrips struct {
	frozen string

	mu        sync.Mutex
	on        bool
	inFlight  int
	sent      int // round trips the frozen member got
	cut       int // of them, ended unanswered while their call went on
	otherCuts int // round trips to the live members cut
	answered  int // round trips to the live members answered
	wrong     []string
	reqs      map[any]*reqTrips
}

// reqTrips are one request's round trips.
type reqTrips struct{ frozen, otherCuts int }

func (m *memberTrips) count(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.on = on
}

// intercept runs between clientv3's retries and the store's attempt
// deadline (attemptInterceptor): it sees each round trip, and gRPC tells
// the member (its address) that got it.
func (m *memberTrips) intercept(ctx context.Context, method string, req, reply any,
	cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	m.mu.Lock()
	on := m.on
	if on {
		m.inFlight++
	}
	m.mu.Unlock()
	if !on {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	var p peer.Peer
	err := invoker(ctx, method, req, reply, cc, append(slices.Clip(opts), grpc.Peer(&p))...)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inFlight--
	r := m.reqs[req]
	if r == nil {
		r = &reqTrips{}
		m.reqs[req] = r
	}
	switch {
	case p.Addr != nil && p.Addr.String() == m.frozen:
		m.sent++
		r.frozen++
		if attemptCut(ctx, err) {
			m.cut++
		} else {
			m.wrong = append(m.wrong, fmt.Sprintf("%s to the frozen member: %v (its call's context: %v)", method, err, ctx.Err()))
		}
	case err == nil:
		m.answered++
	case attemptCut(ctx, err):
		m.otherCuts++
		r.otherCuts++
	}
	return err
}

// attemptCut reports whether err ended a round trip of a call whose
// context ctx goes on at its attempt deadline: a deadline error, or the
// store's words for a cut it must see (attemptInterceptor); not a closed
// connection's error, whose code is Unavailable too.
func attemptCut(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	switch status.Code(err) {
	case codes.DeadlineExceeded:
		return true
	case codes.Unavailable:
		return strings.Contains(err.Error(), "no answer within the attempt deadline")
	}
	return false
}

func (m *memberTrips) summary() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprintf("%d round trips to the frozen member, %d of them cut; on the others %d answered, %d cut; %d requests; %d in flight",
		m.sent, m.cut, m.answered, m.otherCuts, len(m.reqs), m.inFlight)
}

// check fails t unless the frozen member got round trips, each of them cut,
// and no request went to it twice but after cuts on the live members.
func (m *memberTrips) check(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sent == 0 {
		t.Error("no round trip went to the frozen member: the test tested nothing")
	}
	for _, w := range m.wrong {
		t.Errorf("not cut at its attempt deadline: %s", w)
	}
	var again int
	for _, r := range m.reqs {
		if r.frozen > 1+r.otherCuts {
			again++
		}
	}
	if again > 0 {
		t.Errorf("%d requests sent to the frozen member again after their cut there, not to another member", again)
	}
}

// frozenOthers runs the other calls that retry: a Seal, an Advance, and a
// slot's Acquire, Renews and Release.
func frozenOthers(st *store.Store) error {
	ctx := context.Background()
	if _, err := st.Ranges().Next(ctx, "s", 1); err != nil {
		return fmt.Errorf("Next: %w", err)
	}
	if _, err := st.Ranges().Seal(ctx, "s"); err != nil {
		return fmt.Errorf("Seal: %w", err)
	}
	if _, err := st.Ranges().Advance(ctx, "a", 100); err != nil {
		return fmt.Errorf("Advance: %w", err)
	}
	ns := store.Namespace{Name: "w", Limit: 4, Tolerance: time.Second}
	l, err := st.Slots().Acquire(ctx, ns, "o", store.AcquireOptions{})
	if err != nil {
		return fmt.Errorf("Acquire: %w", err)
	}
	for range 5 {
		if l, err = st.Slots().Renew(ctx, l); err != nil {
			return fmt.Errorf("Renew: %w", err)
		}
	}
	if err := st.Slots().Release(ctx, l); err != nil {
		return fmt.Errorf("Release: %w", err)
	}
	return nil
}
