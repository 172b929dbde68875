package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// fieldStoreID is the root's line holding the store's identity.
const fieldStoreID = "store_id"

var _ driver.Identifier = (*driverStore)(nil)

// rootData is the data of a root the store creates: its identity.
func rootData() []byte { return []byte(fieldStoreID + "=" + driver.NewStoreID() + "\n") }

// StoreID returns the store_id line of the root's data (driver.Identifier).
// The root gets it when a store creates the root. A store that may create
// (the create option) creates a missing root, and adds the line, on the
// version it read, to a root made before identities existed (by hand, or
// by an older version); one opened with create=false only reads.
func (s *session) StoreID(ctx context.Context) (string, error) {
	a := attempts{s: s}
	for {
		rs, err := s.getNodes(ctx, []string{s.root}, &a)
		if err != nil {
			return "", err
		}
		r := rs[0]
		switch {
		case errors.Is(r.err, zk.ErrNoNode):
			if !s.mayCreate() {
				return "", s.noStore()
			}
			// createParents makes every ancestor of a path: the root is
			// the last one of root + "/".
			if err := s.createParents(ctx, s.root+"/", &a); err != nil {
				return "", err
			}
			continue
		case r.err != nil:
			return "", fmt.Errorf("zookeeper: read %s: %w", s.root, r.err)
		}
		lines, err := parseNodeLines(r.data)
		if err != nil {
			return "", corruptData(s.root, r.data, err)
		}
		if id, ok := lines.get(fieldStoreID); ok {
			if strings.TrimSpace(id) == "" {
				return "", corruptData(s.root, r.data, errors.New("empty store_id"))
			}
			return id, nil
		}
		if !s.mayCreate() {
			return "", fmt.Errorf("zookeeper: %s has no store_id line yet (made before identities existed): "+
				"a store opened with create=true writes one: %w", s.root, driver.ErrNotFound)
		}
		data, err := withLine(r.data, fieldStoreID, driver.NewStoreID())
		if err == nil {
			err = checkVersion(s.root, r.stat.Version)
		}
		if err != nil {
			return "", fmt.Errorf("zookeeper: %s: %w", s.root, err)
		}
		_, err = call(ctx, s, func() (*zk.Stat, error) { return s.conn.Set(s.root, data, r.stat.Version) })
		switch {
		case err == nil, errors.Is(err, zk.ErrBadVersion):
			continue // read what is there now, ours or another store's
		}
		// A lost answer is settled by the next read too.
		if err := a.retry(ctx, err); err != nil {
			return "", fmt.Errorf("zookeeper: write %s: %w", s.root, err)
		}
	}
}

// mayCreate is false for a store Open made with create=false.
func (s *session) mayCreate() bool { return !s.owned || s.cfg.create }

// noStore is the error of a store opened with create=false on a root that
// does not exist.
func (s *session) noStore() error {
	return fmt.Errorf("zookeeper: no store at root %s on %s: the node does not exist, and create=false creates nothing: %w",
		s.root, strings.Join(s.cfg.servers, ","), driver.ErrNotFound)
}

// checkRootExists fails with noStore when the root is missing, for Connect
// of a store opened with create=false.
func (s *session) checkRootExists(ctx context.Context) error {
	a := attempts{s: s}
	for {
		ok, err := call(ctx, s, func() (bool, error) {
			ok, _, err := s.conn.Exists(s.root)
			return ok, err
		})
		switch {
		case err == nil && ok, errors.Is(err, zk.ErrNoAuth): // only an existing node can deny access
			return nil
		case err == nil:
			return s.noStore()
		}
		if err := a.retry(ctx, err); err != nil {
			return fmt.Errorf("zookeeper: read %s: %w", s.root, err)
		}
	}
}
