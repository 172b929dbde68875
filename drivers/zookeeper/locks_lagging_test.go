package zookeeper

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestLockSweepOnLaggingMember: the removal of a node whose create has an
// unknown outcome (its answer was lost) sweeps the lock's children for the
// node's GUID, and must find a node the leader has even when the member the
// store is connected to has not applied it yet. A session reads its own
// answered writes on any member, but not a create whose answer it never
// got: its last zxid does not cover it, so the member may be behind it.
//
// The store reads through follower B. B's links to the other members are
// frozen; B goes on answering the store's reads from its tree until it
// notices, syncLimit later. A node with the GUID of one of the store's lock
// nodes is then created through the leader: it stands for the create whose
// answer was lost (the sweep deletes by GUID, whatever session made the
// node). Once the removal is over and B healed, the node must be gone: left
// there, it would be ahead of every later Lock on the name.
func TestLockSweepOnLaggingMember(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-server ensemble")
	}
	for _, version := range zktest.Versions() {
		t.Run(version, func(t *testing.T) { testLockSweepOnLaggingMember(t, version) })
	}
}

func testLockSweepOnLaggingMember(t *testing.T, version string) {
	ens := zktest.StartLinkedEnsemble(t, version, 3)
	waitAllServing(t, ens)
	l := ens.Leader()
	b := (l + 1) % len(ens.Members)
	const name = "lagging"
	root := randomRoot()
	s := openTest(t, testOptions(ens.Members[b].Addr(), map[string]string{"root": root}), nil)
	holder := openTest(t, testOptions(ens.Members[l].Addr(), map[string]string{"root": root}), nil)
	leader := rawConn(t, ens.Members[l].Addr())
	defer leader.Close()
	ctx := t.Context()

	// The holder keeps the lock's parent (a container) in use.
	h, err := holder.Lock(ctx, name, "holder", true)
	if err != nil {
		t.Fatal(err)
	}
	parent := s.lockParent(name)
	syncRead(t, s, parent) // B has the parent

	// A node of the store whose create went out and was answered with a
	// lost connection: no path, and possibly a node.
	n, err := s.registerLockNode(name, "o")
	if err != nil {
		t.Fatal(err)
	}
	answered := make(chan struct{})
	close(answered)
	s.sess.mu.Lock()
	n.sid, n.inflight = s.conn.SessionID(), answered
	s.sess.mu.Unlock()

	ens.Isolate(b)
	healed := false
	defer func() {
		if !healed {
			ens.Heal(b)
		}
	}()
	created, err := leader.Create(parent+"/"+lockNodePrefix+n.guid+lockNodeInfix, []byte("o"),
		zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatalf("create through the leader while B is cut off: %v", err)
	}
	s.abandonLockNode(n, 0)
	// A removal that trusts B's tree is over at once; one that waits for B
	// to catch up needs B back.
	lockEventually(t, 30*time.Second, "the removal over, or member B out of the quorum", func() bool {
		return lockedCount(s) == 0 || ens.Members[b].Mode() == ""
	})
	ens.Heal(b)
	healed = true
	lockEventually(t, 60*time.Second, "the store forgets its node", func() bool { return lockedCount(s) == 0 })

	if ok, _, err := leader.Exists(created); err != nil {
		t.Fatal(err)
	} else if ok {
		t.Errorf("node %s, with the GUID of the store's removed node, is still there: "+
			"the sweep read a member behind the leader and missed it", created)
	}
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
