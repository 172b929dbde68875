package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// Locks lists every lock name that has a parent node, sorted.
func (s *lockStore) Locks(ctx context.Context) ([]string, error) {
	a := attempts{s: s.session}
	names, err := s.children(ctx, s.root+"/lock", &a)
	if err != nil {
		return nil, err
	}
	out := append(make([]string, 0, len(names)), names...)
	slices.Sort(out)
	return out, nil
}

// ListLocks lists one page of lock names (driver.LockLister). ZooKeeper
// lists a node's children all at once, so a page reads every name and
// keeps the page: what it holds past the read is limit names.
func (s *lockStore) ListLocks(ctx context.Context, after string, limit int) ([]string, error) {
	a := attempts{s: s.session}
	names, err := s.children(ctx, s.root+"/lock", &a)
	if err != nil {
		return nil, err
	}
	page := make([]string, 0, min(limit, len(names)))
	for _, n := range names {
		if n > after {
			page = append(page, n)
		}
	}
	slices.Sort(page)
	return slices.Clip(page[:min(limit, len(page))]), nil
}

// Waiters lists the holder and waiters of name in lock order, with each
// node's owner key (its data) and fence (its czxid plus the root's lock
// fence offset, lock_seal.go). Nodes that are not lock nodes are left out,
// and so are nodes that leave while being read.
func (s *lockStore) Waiters(ctx context.Context, name string) ([]driver.Waiter, error) {
	if err := checkPathText("lock name", name); err != nil {
		return nil, err
	}
	parent := s.lockParent(name)
	a := attempts{s: s.session}
	kids, err := s.lockChildren(ctx, parent, &a)
	if err != nil {
		return nil, err
	}
	type entry struct {
		name    string
		seq     int32
		present bool
		w       driver.Waiter
	}
	entries := make([]entry, 0, len(kids))
	for _, k := range kids {
		if _, seq, ok := parseLockNode(k); ok {
			entries = append(entries, entry{name: k, seq: seq})
		}
	}
	err = parallel(ctx, len(entries), func(ctx context.Context, i int) error {
		e := &entries[i]
		a := attempts{s: s.session}
		for {
			type got struct {
				data []byte
				stat *zk.Stat
			}
			g, err := call(ctx, s, func() (got, error) {
				data, stat, err := s.conn.Get(parent + "/" + e.name)
				return got{data, stat}, err
			})
			switch {
			case err == nil:
				e.present, e.w = true, driver.Waiter{Owner: string(g.data), Fence: g.stat.Czxid}
				return nil
			case errors.Is(err, zk.ErrNoNode):
				return nil
			}
			if err := a.retry(ctx, err); err != nil {
				return fmt.Errorf("zookeeper: read %s/%s: %w", parent, e.name, err)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if _, err := s.readLockRoot(ctx, &a); err != nil {
		return nil, err
	}
	s.rootCache.mu.Lock()
	offset := s.rootCache.state.offset
	s.rootCache.mu.Unlock()
	slices.SortFunc(entries, func(a, b entry) int { return seqCompare(a.seq, b.seq) })
	out := make([]driver.Waiter, 0, len(entries))
	for _, e := range entries {
		if e.present {
			if e.w.Fence, err = offsetFence(name, e.w.Fence, offset); err != nil {
				return nil, err
			}
			out = append(out, e.w)
		}
	}
	return out, nil
}
