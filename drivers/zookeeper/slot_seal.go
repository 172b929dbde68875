package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// SealNamespace seals namespace ns (see driver.SlotLeaseStore): one
// compare-and-set of the namespace node that appends the line sealed=true
// and keeps every other line. An acquire's and a renewal's multi check the
// version of that node they read before the slot (guard), so none lands
// after the seal. A missing namespace is created sealed, with limit 0.
func (s *slotStore) SealNamespace(ctx context.Context, ns string) error {
	if err := checkPathText("namespace", ns); err != nil {
		return err
	}
	path := s.nsPath(ns)
	a := attempts{s: s.session}
	for {
		rs, err := s.getNodes(ctx, []string{path}, &a)
		if err != nil {
			return err
		}
		r := rs[0]
		switch {
		case errors.Is(r.err, zk.ErrNoNode):
			if err := s.createNamespace(ctx, driver.Namespace{Name: ns}, true, &a); err != nil {
				return err
			}
			continue // read what was created, by this call or another
		case r.err != nil:
			return fmt.Errorf("zookeeper: read %s: %w", path, r.err)
		}
		_, _, sealed, err := parseNamespace(r.data)
		switch {
		case err != nil:
			return corruptData(path, r.data, err)
		case sealed:
			return s.guardNsSeal(path, 0, r.stat.Czxid, true)
		}
		if err := checkVersion(path, r.stat.Version); err != nil {
			return err
		}
		data := slices.Clone(r.data)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			data = append(data, '\n')
		}
		data = append(data, sealedLine...)
		version := r.stat.Version
		stat, err := call(ctx, s, func() (*zk.Stat, error) { return s.conn.Set(path, data, version) })
		switch {
		case err == nil:
			return s.guardNsSeal(path, 0, stat.Czxid, true)
		case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode):
			continue // written or deleted meanwhile: read it again
		case definite(err):
			return fmt.Errorf("zookeeper: seal %s: %w", path, err)
		}
		// The next read tells whether the write landed.
		if err := a.retry(ctx, err); err != nil {
			return fmt.Errorf("zookeeper: seal %s: outcome unknown: %w", path, err)
		}
	}
}

func sealedErr(nsPath string) error {
	return fmt.Errorf("zookeeper: namespace %s is sealed: %w", nsPath, driver.ErrSealed)
}
