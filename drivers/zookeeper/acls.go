package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// NodeACL is one node of a store and its ACL, for tools (storectl acl).
type NodeACL struct {
	Path string
	ACL  []zk.ACL
	// Err is why the ACL or the children of the node could not be read
	// (typically zk.ErrNoAuth); nodes below an unlistable node are missing.
	Err error
}

// ACLEntry writes one ACL entry as scheme:id:perms, the acl option's
// syntax. ZooKeeper shows a digest's hash only to sessions with the admin
// permission; others see "user:x".
func ACLEntry(a zk.ACL) string {
	return a.Scheme + ":" + a.ID + ":" + PermString(a.Perms)
}

// ACLs lists the root and every node below it, depth first in path order,
// with their ACLs. A missing root gives an empty list. Nodes are read one
// by one, each within ctx; nothing is changed.
func (s *driverStore) ACLs(ctx context.Context) ([]NodeACL, error) {
	var out []NodeACL
	var visit func(path string) error
	visit = func(path string) error {
		acl, err := call(ctx, s, func() ([]zk.ACL, error) {
			acl, _, err := s.conn.GetACL(path)
			return acl, err
		})
		if errors.Is(err, zk.ErrNoNode) {
			return nil // deleted meanwhile
		}
		n := NodeACL{Path: path, ACL: acl}
		if err != nil && !errors.Is(err, zk.ErrNoAuth) {
			return fmt.Errorf("zookeeper: read the ACL of %s: %w", path, err)
		}
		n.Err = err
		kids, err := call(ctx, s, func() ([]string, error) {
			kids, _, err := s.conn.Children(path)
			return kids, err
		})
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrNoAuth):
			n.Err = errors.Join(n.Err, fmt.Errorf("list children: %w", err))
		case err != nil:
			return fmt.Errorf("zookeeper: list %s: %w", path, err)
		}
		out = append(out, n)
		slices.Sort(kids)
		for _, k := range kids {
			if err := visit(path + "/" + k); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit(s.root); err != nil {
		return nil, err
	}
	return out, nil
}

// FormatACL writes an ACL as the acl option takes it: comma-separated
// scheme:id:perms entries.
func FormatACL(acl []zk.ACL) string {
	parts := make([]string, len(acl))
	for i, a := range acl {
		parts[i] = ACLEntry(a)
	}
	return strings.Join(parts, ",")
}
