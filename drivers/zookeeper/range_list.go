package zookeeper

import (
	"context"
	"slices"
)

// Keys walks {root}/range and lists every node holding a value. Nodes with
// empty data are parents of longer keys, not keys; data that does not parse
// fails the walk with ErrCorrupt rather than hide a key from a migration.
func (s *rangeStore) Keys(ctx context.Context) ([]string, error) {
	base := s.root + "/range"
	keys := []string{}
	level := []string{""} // keys (relative to base) whose children are listed next
	for len(level) > 0 {
		children := make([][]string, len(level))
		err := parallel(ctx, len(level), func(ctx context.Context, i int) error {
			a := attempts{s: s.session}
			names, err := s.children(ctx, join(base, level[i]), &a)
			children[i] = names
			return err
		})
		if err != nil {
			return nil, err
		}
		var found []string
		for i, names := range children {
			for _, name := range names {
				found = append(found, join(level[i], name))
			}
		}
		nodes := make([]rangeNode, len(found))
		err = parallel(ctx, len(found), func(ctx context.Context, i int) error {
			a := attempts{s: s.session}
			n, err := s.readRange(ctx, join(base, found[i]), &a)
			nodes[i] = n
			return err
		})
		if err != nil {
			return nil, err
		}
		level = level[:0]
		for i, n := range nodes {
			if n.exists && !n.empty {
				keys = append(keys, found[i])
			}
			if n.stat.NumChildren > 0 {
				level = append(level, found[i])
			}
		}
	}
	slices.Sort(keys)
	return keys, nil
}
