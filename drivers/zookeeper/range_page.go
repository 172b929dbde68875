package zookeeper

import (
	"container/heap"
	"context"
	"slices"
	"strings"

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
// queue: the children of the nodes on its path (for keys all under one
// node, that node's children), never the whole tree.
func (s *rangeStore) ListRanges(ctx context.Context, after string, limit int) ([]driver.KeyState, error) {
	base := s.root + "/range"
	a := attempts{s: s.session}
	if err := s.sync(ctx, base, &a); err != nil {
		return nil, err
	}
	out := make([]driver.KeyState, 0, limit)
	q := &keyQueue{{at: "", list: true}}
	for q.Len() > 0 && len(out) < limit {
		if top := (*q)[0]; top.list {
			heap.Pop(q)
			names, err := s.children(ctx, join(base, top.key), &a)
			if err != nil {
				return nil, err
			}
			kept := names[:0]
			for _, n := range names {
				if !below(join(top.key, n), after) {
					kept = append(kept, n)
				}
			}
			if len(kept) > 0 {
				// One entry for the whole list, taken a name at a time.
				slices.Sort(kept)
				heap.Push(q, walkItem{key: top.key, at: join(top.key, kept[0]), names: kept})
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
			return nil, err
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
	return out, nil
}

// below says that key and every key under it are at or below after.
func below(key, after string) bool {
	return key <= after && key+"/" < after && !strings.HasPrefix(after, key+"/")
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
