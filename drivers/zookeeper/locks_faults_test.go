package zookeeper

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestLockEnsembleFaults is the lock's exclusion and fence proof under
// faults: 3 stores, each reaching every member of a 3-server ensemble
// through proxies of its own, take one lock in turn (2 workers each) while
// members (the leader included) are killed and restarted, stores are cut
// off (past their session timeout too) and a member is cut off from the
// others while its clients stay connected. Every grant is checked when it
// happens: no other hold whose Lost is still open, a fence above the last
// one, and a fence equal to the holder node's czxid (Waiters). Afterwards
// every store takes the lock again and nothing is left behind.
func TestLockEnsembleFaults(t *testing.T) { onEachEnsemble(t, 10*time.Second, testLockEnsembleFaults) }

// holdLog checks grants against the holds before them.
type holdLog struct {
	mu     sync.Mutex
	active map[*faultHold]struct{}
	last   int64 // fence of the last hold recorded while its Lost was open
	grants int
}

type faultHold struct {
	who   string
	l     driver.Lock
	fence int64
}

// granted records h. Every check runs under one mutex, so the order of
// records is an order in time: a hold recorded with its Lost open held the
// lock then, so (if no two ever hold at once) it was granted after every
// hold recorded before it was, and its fence must be above theirs.
func (g *holdLog) granted(t *testing.T, h *faultHold) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.grants++
	for o := range g.active {
		if !isClosed(o.l.Lost()) {
			t.Errorf("two holders: %s granted (fence %d) while %s (fence %d) holds, its Lost still open",
				h.who, h.fence, o.who, o.fence)
		}
	}
	if !isClosed(h.l.Lost()) {
		if h.fence <= g.last {
			t.Errorf("%s granted fence %d, not above the last holder's %d", h.who, h.fence, g.last)
		}
		g.last = h.fence
	}
	if g.active == nil {
		g.active = map[*faultHold]struct{}{}
	}
	g.active[h] = struct{}{}
}

// ended is called before h's Unlock.
func (g *holdLog) ended(h *faultHold) {
	g.mu.Lock()
	delete(g.active, h)
	g.mu.Unlock()
}

// checkFenceIsCzxid asks the store for the lock's queue while h holds: h's
// node comes first (after twins of its own, a create sent twice), and its
// fence is that node's czxid. Skipped when the read fails or h was lost
// meanwhile.
func checkFenceIsCzxid(t *testing.T, ctx context.Context, s *driverStore, name, owner string, h *faultHold) bool {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ws, err := s.Waiters(rctx, name)
	if err != nil || isClosed(h.l.Lost()) {
		return false
	}
	for _, w := range ws {
		if w.Owner != owner {
			break
		}
		if w.Fence == h.fence {
			return true
		}
	}
	t.Errorf("%s holds with fence %d, but the queue is %+v", h.who, h.fence, ws)
	return false
}

func testLockEnsembleFaults(t *testing.T, version string, duration time.Duration) {
	ens := zktest.StartLinkedEnsemble(t, version, 3)
	const stores, workers, name = 3, 2, "chaos"
	sts, proxies := openBehindProxies(t, ens, stores, randomRoot())

	var (
		log      holdLog
		checked  atomic.Int64
		fail     atomic.Int64
		failures sync.Map
	)
	run, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for i, s := range sts {
		for w := range workers {
			wg.Go(func() {
				for k := 0; run.Err() == nil; k++ {
					owner := fmt.Sprintf("s%dw%d-%d", i, w, k)
					// 10s: six workers queue for one lock, and at load 50
					// most 3s waits ended before their turn (9 grants).
					ctx, cancel := context.WithTimeout(run, 10*time.Second)
					l, err := s.Lock(ctx, name, owner, true)
					cancel()
					if err != nil {
						fail.Add(1)
						countFailure(&failures, "lock: "+err.Error())
						continue
					}
					h := &faultHold{who: owner, l: l, fence: l.Fence()}
					log.granted(t, h)
					if checkFenceIsCzxid(t, run, s, name, owner, h) {
						checked.Add(1)
					}
					log.ended(h)
					uctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
					if err := l.Unlock(uctx); err != nil {
						countFailure(&failures, "unlock: "+err.Error())
					}
					cancel()
				}
			})
		}
	}
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	done := zktest.LockFaults(t, ens, proxies, rnd).Run(t, duration)
	stop()
	wg.Wait()
	t.Logf("faults: %s", strings.Join(done, "; "))
	t.Logf("grants: %d (fence = czxid checked on %d), failed Lock calls: %d", log.grants, checked.Load(), fail.Load())
	failures.Range(func(k, v any) bool {
		t.Logf("  %5d× %s", v.(*atomic.Int64).Load(), k)
		return true
	})
	if log.grants < 10 || checked.Load() == 0 {
		t.Errorf("only %d grants (%d checked): the test proved little", log.grants, checked.Load())
	}

	// Once healed, every store gets the lock in turn, and no node is left.
	ens.WaitQuorum(t)
	waitCommits(t, ens, sts[0].root)
	for i, s := range sts {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		l, err := s.Lock(ctx, name, "after", true)
		if err != nil {
			cancel()
			dumpLockState(t, ens, sts, name)
			t.Fatalf("store %d: Lock after the faults: %v", i, err)
		}
		h := &faultHold{who: fmt.Sprintf("store %d after the faults", i), l: l, fence: l.Fence()}
		log.granted(t, h)
		log.ended(h)
		if err := l.Unlock(ctx); err != nil {
			t.Errorf("store %d: Unlock after the faults: %v", i, err)
		}
		cancel()
	}
	s := sts[0]
	lockEventually(t, 30*time.Second, "no lock node left once every store unlocked", func() bool {
		syncRead(t, s, s.lockParent(name))
		kids, _, err := s.conn.Children(s.lockParent(name))
		return err != nil || len(kids) == 0 // a missing parent (the container went) is empty too
	})
}

// waitCommits waits until every member of ens commits a write made
// through it: a member that rejoined may take a while to serve again.
func waitCommits(t *testing.T, ens *zktest.Ensemble, root string) {
	t.Helper()
	for i, m := range ens.Members {
		conn := rawConn(t, m.Addr())
		lockEventually(t, 60*time.Second, fmt.Sprintf("the ensemble recovered from the faults: a write through member %d", i+1), func() bool {
			_, err := conn.Create(root+"/probe-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
			return err == nil
		})
		conn.Close()
	}
}

// dumpLockState logs what each store knows and the lock's nodes as each
// member sees them, for a failure after the faults.
func dumpLockState(t *testing.T, ens *zktest.Ensemble, sts []*driverStore, name string) {
	for i, s := range sts {
		t.Logf("store %d: state %v, session %#x, nodes tracked %d", i, s.conn.State(), s.conn.SessionID(), lockedCount(s))
	}
	parent := sts[0].lockParent(name)
	for i, m := range ens.Members {
		conn := rawConn(t, m.Addr())
		kids, _, err := conn.Children(parent)
		t.Logf("member %d (%s): children %q (%v)", i+1, m.Mode(), kids, err)
		for _, k := range kids {
			data, stat, err := conn.Get(parent + "/" + k)
			if err == nil {
				t.Logf("  %s: owner %q, czxid %#x, session %#x", k, data, stat.Czxid, stat.EphemeralOwner)
			}
		}
		conn.Close()
	}
}
