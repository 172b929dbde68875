package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/poll"
)

// The operator's hooks of the TCK harness (tck.Snapshotter,
// tck.HandDeleter, tck.SessionEnder, tck.SlotCorrupter, ...), done as an
// operator would: nodes read and written with a client of the operator's
// own, and a store's connections cut until the server expired its session.

// harnessOps is what a harness's hooks share: the operator's connection
// and each store's connections.
type harnessOps struct {
	once    sync.Once
	conn    *zk.Conn
	mu      sync.Mutex
	cutters map[driver.Store]*cutter
}

// raw returns the operator's connection, made at its first use.
func (h harness) raw() *zk.Conn {
	h.ops.once.Do(func() { h.ops.conn = rawConn(h.t, h.srv.Addr()) })
	return h.ops.conn
}

// cutter holds a store's connections to the server, to cut them.
type cutter struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

// wrap is the store's connection wrapper: while cut, a new connection is
// closed at once.
func (c *cutter) wrap(n net.Conn) net.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		n.Close()
	}
	c.conns = append(c.conns, n)
	return n
}

func (c *cutter) setCut(cut bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = cut
	if cut {
		for _, n := range c.conns {
			n.Close()
		}
	}
	c.conns = nil
}

// EndSession cuts d's connections until the server has expired its
// session (the ephemeral nodes it owned are gone), then lets it connect
// again, to find its session ended (tck.SessionEnder).
func (h harness) EndSession(_ context.Context, d driver.Store) error {
	h.ops.mu.Lock()
	c := h.ops.cutters[d]
	h.ops.mu.Unlock()
	s, ok := d.(*driverStore)
	if c == nil || !ok {
		return fmt.Errorf("EndSession of %T, not a store of this harness", d)
	}
	sid := s.conn.SessionID()
	owned, err := h.ephemerals(sid)
	if err != nil {
		return err
	}
	if len(owned) == 0 {
		return fmt.Errorf("session %#x owns no node under %s: nothing would show its end", sid, h.root)
	}
	c.setCut(true)
	defer c.setCut(false)
	conn := h.raw()
	poll.Until(h.t, 60*time.Second, "the server expires the session of the cut store", func() bool {
		for _, p := range owned {
			if ok, _, err := conn.Exists(p); err != nil || ok {
				return false
			}
		}
		return true
	})
	return nil
}

// ephemerals lists the nodes under root that session sid owns.
func (h harness) ephemerals(sid int64) ([]string, error) {
	var owned []string
	err := h.walk(h.root, func(p string, _ []byte, st *zk.Stat) {
		if st.EphemeralOwner == sid {
			owned = append(owned, p)
		}
	})
	return owned, err
}

// walk calls f on every node under p (p included), parents first.
func (h harness) walk(p string, f func(path string, data []byte, st *zk.Stat)) error {
	conn := h.raw()
	data, st, err := conn.Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return err
	}
	f(p, data, st)
	kids, _, err := conn.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	slices.Sort(kids)
	for _, k := range kids {
		if err := h.walk(p+"/"+k, f); err != nil {
			return err
		}
	}
	return nil
}

// Snapshot reads every persistent node under the root; the restore writes
// their data back (creating what is missing) and deletes the persistent
// nodes made since, as a restore from a copy of the tree does
// (tck.Snapshotter).
func (h harness) Snapshot(context.Context) (func(context.Context) error, error) {
	type node struct {
		path string
		data []byte
	}
	var nodes []node
	err := h.walk(h.root, func(p string, data []byte, st *zk.Stat) {
		if st.EphemeralOwner == 0 {
			nodes = append(nodes, node{p, data})
		}
	})
	if err != nil {
		return nil, err
	}
	return func(context.Context) error {
		conn := h.raw()
		kept := map[string]bool{}
		for _, n := range nodes {
			kept[n.path] = true
		}
		var later []string
		if err := h.walk(h.root, func(p string, _ []byte, st *zk.Stat) {
			if st.EphemeralOwner == 0 && !kept[p] {
				later = append(later, p)
			}
		}); err != nil {
			return err
		}
		slices.Reverse(later) // children first
		for _, p := range later {
			// A lock's node may still have a waiter's ephemeral child,
			// and a container may go by itself.
			if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNotEmpty) && !errors.Is(err, zk.ErrNoNode) {
				return fmt.Errorf("deleting %s: %w", p, err)
			}
		}
		for _, n := range nodes {
			_, err := conn.Set(n.path, n.data, -1)
			if errors.Is(err, zk.ErrNoNode) {
				_, err = conn.Create(n.path, n.data, 0, zk.WorldACL(zk.PermAll))
			}
			if err != nil {
				return fmt.Errorf("restoring %s: %w", n.path, err)
			}
		}
		return nil
	}, nil
}

// DeleteRangeKey deletes key's node (tck.HandDeleter).
func (h harness) DeleteRangeKey(_ context.Context, key string) error {
	return h.raw().Delete(h.root+"/range/"+key, -1)
}

// DeleteSlot deletes slot's node, leaving its namespace's (tck.HandDeleter).
func (h harness) DeleteSlot(_ context.Context, ns string, slot int) error {
	return h.raw().Delete(h.root+"/slot/"+ns+"/"+strconv.Itoa(slot), -1)
}

// corruptForms are the values CorruptRangeKey writes over a range node's
// "N" (tck.Corrupter): each is no value of the node's format (decimal
// digits, ":sealed" after them once sealed).
var corruptForms = []func(n string) string{
	func(string) string { return "not-a-number" },
	func(n string) string { return "+" + n },        // a sign
	func(n string) string { return "-" + n },        // a negative value
	func(n string) string { return n + ":sealedx" }, // a suffix not the seal's
}

// CorruptRangeKey writes the form-th wrong value over key's node (tck.Corrupter).
func (h harness) CorruptRangeKey(_ context.Context, key string, form int) (bool, error) {
	if form >= len(corruptForms) {
		return false, nil
	}
	p := h.root + "/range/" + key
	data, _, err := h.raw().Get(p)
	if err != nil {
		return false, err
	}
	_, err = h.raw().Set(p, []byte(corruptForms[form](string(data))), -1)
	return err == nil, err
}

// slotCorruptForms are what CorruptSlot writes over a slot node's data
// (tck.SlotCorrupter): each is refused by parseSlot, so an acquire passes
// the slot over. Times come from the node's mtime, not its lines, so no
// hand edit of a line can make the term's expiry disagree with it.
var slotCorruptForms = []func(data []byte) ([]byte, error){
	func([]byte) ([]byte, error) { return []byte("not a slot node"), nil },      // no name=value lines
	func(d []byte) ([]byte, error) { return withLine(d, fieldIncarnation, "") }, // an owner without an incarnation
	func(d []byte) ([]byte, error) { return withLine(d, fieldFence, "0") },      // a term at fence 0
	func(d []byte) ([]byte, error) { // a ttl above the largest
		return withLine(d, fieldTTL, strconv.FormatInt(store.MaxTTL.Milliseconds()+1, 10))
	},
}

// CorruptSlot writes the form-th wrong value over slot's node, which keeps
// its other lines, as a hand edit with zkCli's set would (tck.SlotCorrupter).
func (h harness) CorruptSlot(_ context.Context, ns string, slot, form int) (bool, error) {
	if form >= len(slotCorruptForms) {
		return false, nil
	}
	p := h.root + "/slot/" + ns + "/" + strconv.Itoa(slot)
	data, _, err := h.raw().Get(p)
	if err != nil {
		return false, err
	}
	if data, err = slotCorruptForms[form](data); err != nil {
		return false, fmt.Errorf("%s: %w", p, err)
	}
	_, err = h.raw().Set(p, data, -1)
	return err == nil, err
}

// DeleteLockHolder deletes the holder's node of name, the child with the
// lowest sequence number, as zkCli's delete does (tck.LockDeleter).
func (h harness) DeleteLockHolder(_ context.Context, name string) error {
	p := h.root + "/lock/" + name
	kids, _, err := h.raw().Children(p)
	if err != nil {
		return err
	}
	holder, low := "", ""
	for _, k := range kids {
		if seq := k[max(0, len(k)-10):]; holder == "" || seq < low {
			holder, low = k, seq
		}
	}
	if holder == "" {
		return fmt.Errorf("lock %q has no holder node", name)
	}
	return h.raw().Delete(p+"/"+holder, -1)
}

// DeleteNamespace cannot be done here (tck.NamespaceDeleter): the
// namespace's node is its slots' parent, and ZooKeeper deletes no node
// with children.
func (harness) DeleteNamespace(context.Context, string) error {
	return fmt.Errorf("a namespace node is its slots' parent, and ZooKeeper deletes no node with children: %w", driver.ErrUnsupported)
}
