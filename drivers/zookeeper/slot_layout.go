package zookeeper

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// layoutName is the child of a namespace node that holds the layout of
// its IDs (driver.LayoutKeeper). It is created once and never rewritten:
// its create is the compare-and-set, and the namespace node itself, whose
// version the slot writes check, is not touched.
const layoutName = ".layout"

// KeepLayout records the namespace's layout unless it has one, and returns
// its layout (see driver.LayoutKeeper). A missing namespace is created as
// an acquire creates it; a purge deletes the layout with its namespace.
func (s *slotStore) KeepLayout(ctx context.Context, ns driver.Namespace, layout string) (string, error) {
	if err := checkPathText("namespace", ns.Name); err != nil {
		return "", err
	}
	a := attempts{s: s.session}
	if _, _, _, err := s.clockIn(ctx, ns, "", nil, &a); err != nil {
		return "", err
	}
	path := s.nsPath(ns.Name) + "/" + layoutName
	for {
		_, err := call(ctx, s.session, func() (string, error) { return s.conn.Create(path, []byte(layout), 0, s.acl) })
		switch {
		case err == nil:
			return layout, nil
		case errors.Is(err, zk.ErrNodeExists):
			// Recorded before, or by this create with an unknown outcome:
			// what is there is the layout either way.
			rs, err := s.getNodes(ctx, []string{path}, &a)
			if err != nil {
				return "", err
			}
			if rs[0].err != nil {
				return "", fmt.Errorf("zookeeper: read %s: %w", path, rs[0].err)
			}
			if len(rs[0].data) == 0 {
				return "", corruptData(path, rs[0].data, errors.New("no layout"))
			}
			return string(rs[0].data), nil
		case errors.Is(err, zk.ErrNoNode):
			return "", fmt.Errorf("zookeeper: namespace %s is gone (purged?): %w", s.nsPath(ns.Name), driver.ErrNotFound)
		}
		if err := a.retry(ctx, err); err != nil {
			return "", fmt.Errorf("zookeeper: create %s: %w", path, err)
		}
	}
}

// Layout returns the namespace's layout, "" when it has none (see
// driver.LayoutKeeper).
func (s *slotStore) Layout(ctx context.Context, ns string) (string, error) {
	if err := checkPathText("namespace", ns); err != nil {
		return "", err
	}
	a := attempts{s: s.session}
	path := s.nsPath(ns) + "/" + layoutName
	rs, err := s.getNodes(ctx, []string{path}, &a)
	switch {
	case err != nil:
		return "", err
	case errors.Is(rs[0].err, zk.ErrNoNode):
		return "", nil
	case rs[0].err != nil:
		return "", fmt.Errorf("zookeeper: read %s: %w", path, rs[0].err)
	case len(rs[0].data) == 0:
		return "", corruptData(path, rs[0].data, errors.New("no layout"))
	}
	return string(rs[0].data), nil
}
