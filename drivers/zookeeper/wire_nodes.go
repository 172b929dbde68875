package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-zookeeper/zk"
	"golang.org/x/sync/errgroup"

	"github.com/cosid-go/store/driver"
)

// corruptData is the error of a node whose data does not parse; it shows
// the start of the data, quoted, for the operator who must repair it.
func corruptData(path string, data []byte, why error) error {
	const show = 300
	q := strconv.Quote(string(data[:min(len(data), show)]))
	if len(data) > show {
		q += fmt.Sprintf("... (%d bytes)", len(data))
	}
	return fmt.Errorf("zookeeper: %s holds %s: %v: %w", path, q, why, driver.ErrCorrupt)
}

// createParents creates the missing ancestors of path below "/", top down:
// the root with the store's identity (session_identity.go), the others
// empty. A node's ancestors exist when it does, so the deepest ancestor
// there is found by halving (a few reads) and the missing ones are made in
// one multi: one create after another, a key 512 levels deep took 512
// writes, past a call's bound on a loaded server. A multi that fails
// applies nothing: another store made (or a purge deleted) some of them
// meanwhile, and the search runs again.
func (s *session) createParents(ctx context.Context, path string, a *attempts) error {
	var ancestors []string
	for i := 1; i < len(path); i++ {
		if path[i] == '/' {
			ancestors = append(ancestors, path[:i])
		}
	}
	for {
		// ancestors[:lo] exist, ancestors[hi:] do not.
		lo, hi := 0, len(ancestors)
		for lo < hi {
			mid := (lo + hi) / 2
			ok, err := call(ctx, s, func() (bool, error) {
				ok, _, err := s.conn.Exists(ancestors[mid])
				if errors.Is(err, zk.ErrNoAuth) {
					// Only a node that is there is refused (3.9 checks
					// its READ permission): a root made without READ.
					return true, nil
				}
				return ok, err
			})
			if err != nil {
				if err := a.retry(ctx, err); err != nil {
					return fmt.Errorf("zookeeper: read %s: %w", ancestors[mid], err)
				}
				continue
			}
			if ok {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		if lo == len(ancestors) {
			return nil
		}
		ops := make([]any, 0, len(ancestors)-lo)
		for _, parent := range ancestors[lo:] {
			var data []byte
			if parent == s.root {
				data = rootData()
			}
			ops = append(ops, &zk.CreateRequest{Path: parent, Data: data, Acl: s.acl})
		}
		_, err := call(ctx, s, func() ([]zk.MultiResponse, error) { return s.conn.Multi(ops...) })
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNodeExists), errors.Is(err, zk.ErrNoNode):
			if ctx.Err() != nil {
				return fmt.Errorf("zookeeper: create %s: %w", ancestors[lo], ctx.Err())
			}
			continue
		}
		// An unknown outcome is settled by looking again.
		if err := a.retry(ctx, err); err != nil {
			return fmt.Errorf("zookeeper: create %s: %w", ancestors[lo], err)
		}
	}
}

// children lists a node's children; a missing node has none.
func (s *session) children(ctx context.Context, path string, a *attempts) ([]string, error) {
	for {
		names, err := call(ctx, s, func() ([]string, error) {
			names, _, err := s.conn.Children(path)
			return names, err
		})
		switch {
		case err == nil:
			return names, nil
		case errors.Is(err, zk.ErrNoNode):
			return nil, nil
		}
		if err := a.retry(ctx, err); err != nil {
			return nil, fmt.Errorf("zookeeper: list %s: %w", path, err)
		}
	}
}

// join appends a relative key to a path or key; "" is the base itself.
func join(base, rel string) string {
	switch {
	case rel == "":
		return base
	case base == "":
		return rel
	}
	return base + "/" + rel
}

// checkVersion refuses to compare-and-set on version -1, which ZooKeeper
// takes as "any version" (a 3.8.0 server can wrap a node's version to -1,
// ZOOKEEPER-4743).
func checkVersion(path string, version int32) error {
	if version == -1 {
		return fmt.Errorf("zookeeper: %s is at version -1, which a compare-and-set would take as "+
			"\"any version\" (ZOOKEEPER-4743); refusing to write it. Stop every store using it, "+
			"then set its data once by hand to move it off -1", path)
	}
	return nil
}

// parallel runs fn(0..n-1) with a bounded number in flight (go-zookeeper
// pipelines them on the one connection) and returns the first error; the
// others then see their ctx cancelled.
func parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	const inFlight = 32
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(inFlight)
	for i := range n {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(gctx, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err() // a caller's ctx that ended may have cut the loop short
}

// checkPathText refuses names that would become path text ZooKeeper
// rejects, with an error naming the name, where the server would answer only
// "bad arguments". Its arguments are pairs: what the name is, and the name.
// Package store checks the same before calling; this covers callers of the
// driver itself.
func checkPathText(what ...string) error {
	for i := 0; i+1 < len(what); i += 2 {
		for _, r := range what[i+1] {
			if driver.ForbiddenInName(r) {
				return fmt.Errorf("zookeeper: %s %q contains %U, which ZooKeeper refuses in paths: %w",
					what[i], what[i+1], r, driver.ErrInvalidArgument)
			}
		}
	}
	return nil
}
