package zookeeper

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// ListRanges lists one page of keys (driver.RangeLister). Keys are nodes
// under {root}/range, a key "a/b" the child b of node a, and a node's
// children come all at once (ZooKeeper does not page them), so a page
// walks the tree in key order from after: a queue, lowest first, of nodes
// to read and of nodes whose children to list. A node's key sorts at its
// name and the keys below it after name+"/", so a key is taken only once
// nothing left in the queue can hold a lower one; parts of the tree whose
// keys are all at or below after are never read. What a page holds is the
// queue: a page of nodes and the children of the nodes on its path (for
// keys all under one node, that node's children, kept for the next page
// while the node has not changed: childList), never the whole tree.
//
// A page bounds its own work (pageBudget): a key 512 levels deep is 512
// lists and reads one after the other, past any call bound on a loaded
// machine. Past the budget, the page stops where it lists a node's
// children next, and returns what it has and that node's path plus "/" as
// next: no key is that string, every key below it was taken, and every
// key above it is still to come. The next page lists the nodes on after's
// path all at once, not level by level, so it goes on from there.
func (s *rangeStore) ListRanges(ctx context.Context, after string, limit int) ([]driver.KeyState, string, error) {
	base := s.root + "/range"
	a := attempts{s: s.session}
	if err := s.sync(ctx, base, &a); err != nil {
		return nil, "", err
	}
	path, err := s.pathChildren(ctx, base, after)
	if err != nil {
		return nil, "", err
	}
	work := 2 + len(path)/32 // the sync, and the lists of after's path, 32 at a time (parallel)
	out := make([]driver.KeyState, 0, limit)
	q := &keyQueue{{at: "", list: true}}
	for q.Len() > 0 && len(out) < limit {
		if top := (*q)[0]; top.list {
			if work >= pageBudget && top.at > after {
				return out, top.at, nil
			}
			heap.Pop(q)
			names, ok := path[top.key]
			if !ok {
				work++
				if names, err = s.sortedChildren(ctx, join(base, top.key), &a); err != nil {
					return nil, "", err
				}
			}
			start, extra := from(names, top.key, after)
			for _, n := range extra {
				k := join(top.key, n)
				if strings.HasPrefix(after, k+"/") {
					// On after's path: its keys down to after are
					// passed, only its children are still to list.
					heap.Push(q, walkItem{key: k, at: k + "/", list: true})
					continue
				}
				heap.Push(q, walkItem{key: k, at: k})
			}
			if start < len(names) {
				// One entry for the whole list, taken a name at a time.
				heap.Push(q, walkItem{key: top.key, at: join(top.key, names[start]), names: names, idx: start})
			}
			continue
		}
		// The nodes lowest in the queue, read at once; taken in order
		// up to the first with children, which go in the queue before
		// the rest (they sort right after it).
		var batch []walkItem
		for q.Len() > 0 && !(*q)[0].list && len(batch) < limit-len(out) {
			top := heap.Pop(q).(walkItem)
			if top.names == nil {
				batch = append(batch, top)
				continue
			}
			k := join(top.key, top.names[top.idx])
			batch = append(batch, walkItem{key: k, at: k})
			if top.idx++; top.idx < len(top.names) {
				top.at = join(top.key, top.names[top.idx])
				heap.Push(q, top)
			}
		}
		work++
		nodes := make([]rangeNode, len(batch))
		err := parallel(ctx, len(batch), func(ctx context.Context, i int) error {
			if batch[i].read != nil {
				nodes[i] = *batch[i].read
				return nil
			}
			a := attempts{s: s.session}
			n, err := s.readRange(ctx, join(base, batch[i].key), &a)
			nodes[i] = n
			return err
		})
		if err != nil {
			return nil, "", err
		}
		for i, n := range nodes {
			k := batch[i].key
			if n.exists && !n.empty && k > after {
				out = append(out, driver.KeyState{Key: k, Next: n.next, Sealed: n.sealed})
			}
			if n.stat.NumChildren > 0 {
				heap.Push(q, walkItem{key: k, at: k + "/", list: true})
				for j := i + 1; j < len(batch); j++ {
					batch[j].read = &nodes[j]
					heap.Push(q, batch[j])
				}
				break
			}
		}
	}
	next := ""
	if len(out) == limit {
		next = out[len(out)-1].Key // the queue may hold more
	}
	return out, next, nil
}

// pageBudget is the round trips one page waits for in a row (reads and
// lists of a level, each read of a batch at once) before it stops and
// returns what it has: at a few milliseconds each on a loaded machine,
// well within a store timeout.
const pageBudget = 64

// pathChildren lists, all at once, the children of every node on after's
// path (the nodes whose keys are prefixes of after followed by "/"), by
// key: a page that goes on from a deep after reads them in one go rather
// than one level after the other.
func (s *rangeStore) pathChildren(ctx context.Context, base, after string) (map[string][]string, error) {
	var keys []string
	for i := range len(after) {
		if after[i] == '/' {
			keys = append(keys, after[:i])
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	lists := make([][]string, len(keys))
	err := parallel(ctx, len(keys), func(ctx context.Context, i int) error {
		a := attempts{s: s.session}
		if i == len(keys)-1 {
			// The deepest, where a page of many keys under one node
			// goes on: from the listing's kept list (childList).
			names, err := s.sortedChildren(ctx, join(base, keys[i]), &a)
			lists[i] = names
			return err
		}
		names, err := s.children(ctx, join(base, keys[i]), &a)
		slices.Sort(names)
		lists[i] = names
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string][]string, len(keys))
	for i, k := range keys {
		out[k] = lists[i]
	}
	return out, nil
}

// from returns where in names, the sorted children of parent, a page
// after after starts (every name from there on may hold a key above it),
// and the names before that whose keys below them may too: the parent's
// segment of after itself, and its prefixes followed in after by a byte
// below '/' ("a" for "a-b/c": "a/x" sorts after "a-b/c").
func from(names []string, parent, after string) (int, []string) {
	rel := after
	if parent != "" {
		var ok bool
		if rel, ok = strings.CutPrefix(after, parent+"/"); !ok {
			return 0, nil // after is below the parent's keys (or the parent would not be listed)
		}
	}
	seg, _, deeper := strings.Cut(rel, "/")
	var extra []string
	for j := 1; j < len(seg); j++ {
		if seg[j] < '/' {
			if _, ok := slices.BinarySearch(names, seg[:j]); ok {
				extra = append(extra, seg[:j])
			}
		}
	}
	i, found := slices.BinarySearch(names, seg)
	if found {
		extra = append(extra, seg) // its keys below may be above after
		i++
	}
	if deeper {
		// Names seg+c with c below '/' sort before after ("a-b" < "a/b").
		i, _ = slices.BinarySearch(names, seg+"/")
	}
	return i, extra
}

// childList is the sorted children of a node as a listing read them, with
// the node's czxid and cversion then: ZooKeeper lists a node's children
// only all at once, and the same node at the same cversion has the same
// children, so the next page reads them from here after one Exists rather
// than list 100,000 names again. One list is kept: a listing's.
type childList struct {
	path     string
	czxid    int64
	cversion int32
	names    []string
}

// sortedChildren returns path's children, sorted, from the last list if
// the node has not changed since; shared, never to be written.
func (s *rangeStore) sortedChildren(ctx context.Context, path string, a *attempts) ([]string, error) {
	s.kidsMu.Lock()
	c := s.kids
	s.kidsMu.Unlock()
	if c != nil && c.path == path {
		stat, err := call(ctx, s, func() (*zk.Stat, error) {
			_, stat, err := s.conn.Exists(path)
			return stat, err
		})
		if err == nil && stat != nil && stat.Czxid == c.czxid && stat.Cversion == c.cversion {
			return c.names, nil
		}
	}
	for {
		type got struct {
			names []string
			stat  *zk.Stat
		}
		g, err := call(ctx, s, func() (got, error) {
			names, stat, err := s.conn.Children(path)
			return got{names, stat}, err
		})
		switch {
		case err == nil:
			slices.Sort(g.names)
			s.kidsMu.Lock()
			s.kids = &childList{path: path, czxid: g.stat.Czxid, cversion: g.stat.Cversion, names: g.names}
			s.kidsMu.Unlock()
			return g.names, nil
		case errors.Is(err, zk.ErrNoNode):
			return nil, nil
		}
		if err := a.retry(ctx, err); err != nil {
			return nil, fmt.Errorf("zookeeper: list %s: %w", path, err)
		}
	}
}

// walkItem is, at its place in key order (at: the lowest key it may
// give), a node to read, or one whose children to list (list), or such a
// list, sorted, whose names from idx on are still to read (names).
type walkItem struct {
	key, at string
	list    bool
	names   []string
	idx     int
	read    *rangeNode // read already, put back behind a node with children
}

// keyQueue is a min-heap of walkItems by at.
type keyQueue []walkItem

func (w keyQueue) Len() int           { return len(w) }
func (w keyQueue) Less(i, j int) bool { return w[i].at < w[j].at }
func (w keyQueue) Swap(i, j int)      { w[i], w[j] = w[j], w[i] }
func (w *keyQueue) Push(x any)        { *w = append(*w, x.(walkItem)) }
func (w *keyQueue) Pop() any {
	old := *w
	x := old[len(old)-1]
	*w = old[:len(old)-1]
	return x
}
