package etcdtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/poll"
)

// bound is how long the cluster may take to notice a partition or its end:
// an election is a second or two; generous for a loaded machine.
const bound = 60 * time.Second

// TestPartition: a member partitioned from its peers, a follower and then
// the leader, loses its leader; its linearizable reads and the lease
// renewals it must forward fail, while its client port still answers and
// the others go on with a leader of their own. Healed, it follows that
// leader again and reads what was written meanwhile. Every peer
// connection's dialer was found.
func TestPartition(t *testing.T) {
	c := Start(t, 3)
	for round, leader := range []bool{false, true} {
		x := pick(t, c, leader)
		var others []*Member
		for _, m := range c.Members {
			if m != x {
				others = append(others, m)
			}
		}
		key := fmt.Sprintf("round-%d", round)
		// A lease on the majority: x would forward its renewals.
		lease := grant(t, others[0])

		c.Partition(t, x)
		t.Logf("round %d: %s partitioned (leader: %v)", round, x.Name, leader)
		if !leader {
			// At once, while x may still take the old leader for its own:
			// a follower forwards the renewal over a connection it opens.
			// (A leader renews leases itself until it sees it lost its
			// quorum: by etcd's design, the next leader extends them all.)
			if err := keepAlive(x, lease); err == nil {
				t.Errorf("round %d: a lease renewal through %s succeeded after it was partitioned", round, x.Name)
			}
		}
		poll.Until(t, bound, x.Name+" without a leader", func() bool {
			st, err := status(x)
			return err == nil && st.leader == 0
		})
		var majorityLeader uint64
		poll.Until(t, bound, "the others led by one of them", func() bool {
			st, err := status(others[0])
			majorityLeader = st.leader
			return err == nil && st.leader != 0 && st.leader != mustStatus(t, x).member
		})
		poll.Succeeds(t, bound, "a write through the others", func() error {
			return post(others[1], "/v3/kv/put", map[string]any{"key": b64(key), "value": b64("v")}, nil, 5*time.Second)
		})
		if _, err := read(x, key, false); err == nil {
			t.Errorf("round %d: a linearizable read through %s succeeded while it is partitioned", round, x.Name)
		}
		if err := keepAlive(x, lease); err == nil {
			t.Errorf("round %d: a lease renewal through %s succeeded while it has no leader", round, x.Name)
		}
		if _, err := read(x, key, true); err != nil {
			t.Errorf("round %d: a serializable read through %s (its client port must stay reachable): %v", round, x.Name, err)
		}
		poll.Succeeds(t, bound, "a lease renewal through the others", func() error { return keepAlive(others[1], lease) })

		c.Heal()
		poll.Until(t, bound, x.Name+" following the others' leader", func() bool {
			st, err := status(x)
			return err == nil && st.leader == majorityLeader
		})
		poll.Succeeds(t, bound, "a linearizable read through "+x.Name, func() error {
			v, err := read(x, key, false)
			if err == nil && v != "v" {
				return fmt.Errorf("read %q, want the value written during the partition", v)
			}
			return err
		})
		poll.Succeeds(t, bound, "a lease renewal through "+x.Name, func() error { return keepAlive(x, lease) })
	}
	if n := c.unknown.Load(); n != 0 {
		t.Errorf("%d peer connections of unknown dialer", n)
	}
}

// pick returns the leader or a follower.
func pick(t *testing.T, c *Cluster, leader bool) *Member {
	t.Helper()
	var found *Member
	poll.Until(t, bound, fmt.Sprintf("a member with leader=%v", leader), func() bool {
		for _, m := range c.Members {
			st, err := status(m)
			if err == nil && st.leader != 0 && (st.leader == st.member) == leader {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

type memberStatus struct{ member, leader uint64 }

// status asks m for its raft status through etcd's JSON gateway.
func status(m *Member) (memberStatus, error) {
	var resp struct {
		Header struct {
			MemberID string `json:"member_id"`
		} `json:"header"`
		Leader string `json:"leader"`
	}
	if err := post(m, "/v3/maintenance/status", map[string]any{}, &resp, 2*time.Second); err != nil {
		return memberStatus{}, err
	}
	member, err := strconv.ParseUint(resp.Header.MemberID, 10, 64)
	if err != nil {
		return memberStatus{}, fmt.Errorf("member id %q: %v", resp.Header.MemberID, err)
	}
	leader, _ := strconv.ParseUint(resp.Leader, 10, 64) // absent: none
	return memberStatus{member, leader}, nil
}

func mustStatus(t *testing.T, m *Member) memberStatus {
	st, err := status(m)
	if err != nil {
		t.Fatalf("status of %s: %v", m.Name, err)
	}
	return st
}

// read returns key's value through m.
func read(m *Member, key string, serializable bool) (string, error) {
	var resp struct {
		Kvs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := post(m, "/v3/kv/range", map[string]any{"key": b64(key), "serializable": serializable}, &resp, 3*time.Second); err != nil {
		return "", err
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	v, err := base64.StdEncoding.DecodeString(resp.Kvs[0].Value)
	return string(v), err
}

// grant grants a lease of 60s through m.
func grant(t *testing.T, m *Member) string {
	t.Helper()
	var resp struct {
		ID string `json:"ID"`
	}
	poll.Succeeds(t, bound, "a lease grant", func() error {
		return post(m, "/v3/lease/grant", map[string]any{"TTL": 60}, &resp, 5*time.Second)
	})
	return resp.ID
}

// keepAlive renews lease once through m.
func keepAlive(m *Member, lease string) error {
	var resp struct {
		Result struct {
			TTL string `json:"TTL"`
		} `json:"result"`
		Error any `json:"error"`
	}
	if err := post(m, "/v3/lease/keepalive", map[string]any{"ID": lease}, &resp, 3*time.Second); err != nil {
		return err
	}
	if ttl, _ := strconv.Atoi(resp.Result.TTL); ttl <= 0 {
		return fmt.Errorf("keep-alive of %s through %s: ttl %q, error %v", lease, m.Name, resp.Result.TTL, resp.Error)
	}
	return nil
}

// post sends req as JSON to m's gateway and decodes the answer into resp.
func post(m *Member, path string, req, resp any, timeout time.Duration) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: timeout}
	r, err := client.Post(m.ClientURL+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if r.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", m.Name, path, r.Status, b)
	}
	if resp == nil {
		return nil
	}
	return json.Unmarshal(b, resp)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
