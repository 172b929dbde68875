package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// Slot markers: the empty node {root}/made/{ns}/{n} says that slot n of ns
// was made. It is created in the same multi as the slot node (by an
// acquire or a seed), so a slot node found missing while its marker is
// there was deleted by hand, or lost to a restored backup: the next
// create of the slot fails on the marker, and the slot is refused
// (ErrCorrupt) instead of started again at fence 1 and floor 0 under a
// term that may still issue. A purge deletes the markers with the slots.
// Each slot has a marker of its own, written once: no node is written by
// every acquire (a fleet acquiring at once would queue on it).
const madeDir = "made"

func (s *slotStore) madeDirPath(ns string) string { return s.root + "/" + madeDir + "/" + ns }

func (s *slotStore) madePath(ns string, n int) string {
	return s.madeDirPath(ns) + "/" + strconv.Itoa(n)
}

// madeOp is the create of slot n's marker, sent with the slot node's.
func (s *slotStore) madeOp(ns string, n int) *zk.CreateRequest {
	return &zk.CreateRequest{Path: s.madePath(ns, n), Acl: s.acl}
}

// unmadeErr is the error of a missing slot whose marker is there.
func (s *slotStore) unmadeErr(ns string, n int) error {
	return fmt.Errorf("zookeeper: %s is gone but %s says it was made: deleted by hand (or lost to a restore, "+
		"or an unfinished purge: run it again); put it back, with a fence and next floor above what it had, "+
		"before it is used again: %w", s.slotPath(ns, n), s.madePath(ns, n), driver.ErrCorrupt)
}

// createChildren creates paths, children of nodes that exist, in one round
// trip; one there already is fine.
func (s *slotStore) createChildren(ctx context.Context, a *attempts, paths ...string) error {
	for {
		ops := make([]func() tripReply, len(paths))
		for i, p := range paths {
			ops[i] = func() tripReply {
				_, err := s.conn.Create(p, nil, 0, s.acl)
				if errors.Is(err, zk.ErrNodeExists) {
					err = nil
				}
				return tripReply{err: err}
			}
		}
		rs, err := inOneTrip(ctx, s, ops...)
		if err != nil {
			return err
		}
		if err := firstTransient(rs); err != nil {
			if err := a.retry(ctx, err); err != nil {
				return fmt.Errorf("zookeeper: create %s: %w", strings.Join(paths, ", "), err)
			}
			continue
		}
		for i, r := range rs {
			if r.err != nil {
				return fmt.Errorf("zookeeper: create %s: %w", paths[i], r.err)
			}
		}
		return nil
	}
}
