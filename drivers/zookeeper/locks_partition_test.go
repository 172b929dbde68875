package zookeeper

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/zktest"
)

// proofRounds is the number of partition rounds per version and session
// timeout: COSID_LOCK_PROOF_ROUNDS, else 2 (the full proof is 10).
func proofRounds(t *testing.T) int {
	if v := os.Getenv("COSID_LOCK_PROOF_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("COSID_LOCK_PROOF_ROUNDS=%q: want a positive number", v)
		}
		return n
	}
	return 2
}

// TestLockPartition is the proof of SPEC 5's liveness rule: on a 3-member
// ensemble, store A holds a lock through one follower only, store B waits
// through the other two members; then the follower's links to the others
// are frozen (it keeps answering A's pings). In every round A's Lost must
// close before B is granted the lock, both instants taken on this
// process's monotonic clock.
func TestLockPartition(t *testing.T) {
	rounds := proofRounds(t)
	for _, version := range zktest.Versions() {
		t.Run(version, func(t *testing.T) {
			ens := zktest.StartLinkedEnsemble(t, version, 3)
			for _, timeout := range []time.Duration{time.Second, 4 * time.Second} {
				t.Run(timeout.String(), func(t *testing.T) {
					smallest := time.Duration(1<<63 - 1)
					for r := range rounds {
						m := lockPartitionRound(t, ens, timeout, r)
						smallest = min(smallest, m)
					}
					t.Logf("ZooKeeper %s, session timeout %v, %d rounds: smallest margin between A's Lost and B's grant: %v",
						version, timeout, rounds, smallest)
				})
			}
		})
	}
}

// lockPartitionRound runs one round and returns B's grant time less A's
// Lost time.
func lockPartitionRound(t *testing.T, ens *zktest.Ensemble, timeout time.Duration, round int) time.Duration {
	ens.WaitQuorum(t)
	leader := ens.Leader()
	f := (leader + 1 + round%2) % 3 // alternate between the two followers
	var others string
	for i, m := range ens.Members {
		if i != f {
			if others != "" {
				others += ","
			}
			others += m.Addr()
		}
	}
	lockEventually(t, 60*time.Second, "every member serving", func() bool {
		for _, m := range ens.Members {
			if m.Mode() == "" {
				return false
			}
		}
		return true
	})
	root := randomRoot()
	extra := map[string]string{"root": root, "sessionTimeout": timeout.String()}
	a := openTest(t, testOptions(ens.Members[f].Addr(), extra), nil)
	b := openTest(t, testOptions(others, extra), nil)
	ctx := t.Context()
	const name = "partition"
	la, err := a.Lock(ctx, name, "a", true)
	if err != nil {
		t.Fatalf("round %d: A's Lock: %v", round, err)
	}
	type grant struct {
		res lockResult
		at  time.Duration
	}
	chB := make(chan grant, 1)
	go func() {
		l, err := b.Lock(ctx, name, "b", true)
		chB <- grant{lockResult{l, err}, monoNow()} // taken at once: the grant instant, or later
	}()
	lockEventually(t, 20*time.Second, "B queued", func() bool { return queueLength(ctx, b, name) == 2 })
	lost := make(chan time.Duration, 1)
	go func() {
		<-la.Lost()
		lost <- monoNow() // the instant Lost closed, or later
	}()
	// Freeze at a random phase of A's confirmation cycle.
	time.Sleep(rand.N(timeout / 3))
	frozeAt := monoNow()
	ens.Isolate(f)
	defer ens.Heal(f)
	var g grant
	select {
	case g = <-chB:
	case <-time.After(30*timeout + 30*time.Second):
		t.Fatalf("round %d: B not granted the lock within %v of the freeze", round, 30*timeout+30*time.Second)
	}
	if g.res.err != nil {
		t.Fatalf("round %d: B's Lock: %v", round, g.res.err)
	}
	grantedAt := g.at
	var lostAt time.Duration
	select {
	case lostAt = <-lost:
	case <-time.After(10 * time.Second):
		t.Fatalf("round %d: B was granted the lock %v after the freeze and A's Lost did not close: two holders",
			round, grantedAt-frozeAt)
	}
	if lostAt >= grantedAt {
		t.Errorf("round %d: A's Lost closed at +%v, not before B was granted the lock at +%v after the freeze: two holders",
			round, lostAt-frozeAt, grantedAt-frozeAt)
	}
	rb := g.res
	margin := grantedAt - lostAt
	t.Logf("round %d (follower %d): A lost at +%v, B granted at +%v after the freeze: margin %v",
		round, f+1, lostAt-frozeAt, grantedAt-frozeAt, margin)
	if err := rb.l.Unlock(ctx); err != nil {
		t.Errorf("round %d: B's Unlock: %v", round, err)
	}
	a.Close()
	b.Close()
	return margin
}

// TestLockParentVanishes: a lock name's node is a container: once its last
// node is gone the server deletes it (the tests' servers check every
// 500ms), and Locks no longer lists the name.
func TestLockParentVanishes(t *testing.T) {
	for _, version := range zktest.Versions() {
		t.Run(version, func(t *testing.T) {
			addr := zktest.StartServer(t, version).Addr()
			s := openTest(t, testOptions(addr, nil), nil)
			ctx := t.Context()
			l, err := s.Lock(ctx, "order-123", "o", true)
			if err != nil {
				t.Fatal(err)
			}
			names, err := s.Locks(ctx)
			if err != nil || len(names) != 1 || names[0] != "order-123" {
				t.Fatalf("Locks while held = (%v, %v), want [order-123]", names, err)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			conn := rawConn(t, addr)
			lockEventually(t, 30*time.Second, "the unused lock name's node deleted by the server", func() bool {
				ok, _, err := conn.Exists(s.lockParent("order-123"))
				return err == nil && !ok
			})
			names, err = s.Locks(ctx)
			if err != nil || len(names) != 0 {
				t.Errorf("Locks after the name's node vanished = (%v, %v), want none", names, err)
			}
			l, err = s.Lock(ctx, "order-123", "o", true)
			if err != nil {
				t.Fatalf("Lock after the name's node vanished: %v", err)
			}
			if l.Fence() <= 0 {
				t.Errorf("fence %d", l.Fence())
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
