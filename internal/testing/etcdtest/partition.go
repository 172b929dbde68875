package etcdtest

import (
	"net"
	"testing"

	"github.com/cosid-go/store/internal/testing/netproxy"
)

// A cluster of several members can partition one from its peers. etcd's
// peer traffic runs over connections opened both ways: each member dials
// the others' advertised peer URLs, and reads some raft streams over the
// connections it dialed; a follower forwards its clients' lease renewals
// to the leader over its own connections too (requests that carry no
// header naming their sender). So cutting the connections to a member
// leaves its own working. Each member therefore advertises its peer URL
// through a proxy (netproxy) that learns, from the kernel's socket table,
// which member opened each connection it accepts: Partition(x) cuts
// everything reaching x's proxy, and at the others' proxies everything x
// opened; x's client port stays reachable.

// dialer names the member that opened c, a connection to a peer proxy, ""
// if none of the running members holds its other end.
func (c *Cluster) dialer(conn net.Conn) string {
	byPid := map[int]string{}
	var pids []int
	for _, m := range c.Members {
		if p := m.process(); p != nil {
			byPid[p.Pid()] = m.Name
			pids = append(pids, p.Pid())
		}
	}
	pid, err := netproxy.DialedBy(conn, pids...)
	if err != nil {
		c.unknown.Add(1)
		return ""
	}
	return byPid[pid]
}

// Partition cuts m off from its peers until Heal: every peer connection to
// or from it is closed, and each new one refused, while its clients still
// reach it. Several members partitioned are each cut off from all the
// others. It needs a cluster of several members.
func (c *Cluster) Partition(t testing.TB, m *Member) {
	t.Helper()
	if m.proxy == nil {
		t.Fatalf("etcdtest: Partition(%s): a single member has no peers", m.Name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut[m] = true
	m.proxy.Cut()
	for _, o := range c.Members {
		if o != m {
			o.proxy.CutFrom(m.Name)
		}
	}
}

// Heal ends every partition: peer connections are forwarded again.
func (c *Cluster) Heal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for m := range c.cut {
		for _, o := range c.Members {
			if o != m {
				o.proxy.RestoreFrom(m.Name)
			}
		}
		m.proxy.Restore()
		delete(c.cut, m)
	}
}
