package zookeeper

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// leaseState returns the state l carries if it describes l's term on path,
// times included: a lease whose fields were changed after the store
// returned it is judged on a fresh read of the slot, never on its own state.
func leaseState(l driver.Lease, path string) *slotState {
	st, ok := l.State.(*slotState)
	if !ok || st == nil || st.path != path {
		return nil
	}
	if r := st.node.record(st.mtime); !r.Holds(l) || r.Agrees(l) != nil {
		return nil
	}
	return st
}

// leaseLost is the error of a lease whose term the slot no longer holds.
func leaseLost(path string, l driver.Lease, r slotRead) error {
	now := "no node"
	if r.exists {
		now = fmt.Sprintf("fence %d", r.node.fence)
		if r.node.owner != "" {
			now += fmt.Sprintf(" of %s/%s", r.node.owner, r.node.incarnation)
		} else {
			now += ", released"
		}
	}
	return fmt.Errorf("zookeeper: %s no longer holds fence %d of %s/%s (it holds %s): %w",
		path, l.Fence, l.Owner, l.Incarnation, now, driver.ErrLeaseLost)
}

// currentTerm reads l's slot and returns its state if the slot still holds l's
// term on the node of creation zxid czxid (any node when czxid is 0). With
// renew, a sealed namespace is ErrSealed.
func (s *slotStore) currentTerm(ctx context.Context, l driver.Lease, czxid int64, renew bool, a *attempts) (*slotState, slotRead, error) {
	g, sealed, err := s.guardVersions(ctx, l.Namespace, a)
	if err != nil {
		return nil, slotRead{}, err
	}
	r, err := s.readSlot(ctx, l.Namespace, l.Slot, a)
	switch {
	case err != nil:
		return nil, r, err
	case r.bad != nil:
		return nil, r, r.bad
	case r.exists && czxid != 0 && r.stat.Czxid != czxid:
		return nil, r, fmt.Errorf("zookeeper: %s was deleted and recreated (czxid %#x, was %#x): %w (%w)",
			r.path, r.stat.Czxid, czxid, driver.ErrLeaseLost, driver.ErrRecreated)
	case !r.record(0).Holds(l):
		return nil, r, leaseLost(r.path, l, r)
	case r.stat.Version == -1:
		return nil, r, checkVersion(r.path, -1)
	case renew && sealed:
		return nil, r, sealedErr(s.nsPath(l.Namespace))
	case renew && g.ns == -1:
		return nil, r, fmt.Errorf("zookeeper: %s was deleted (a purge under way?): %w", s.nsPath(l.Namespace), driver.ErrLeaseLost)
	}
	return r.state(g), r, nil
}

// guardVersions reads the root's and namespace ns's versions (see guard),
// and whether ns is sealed. A namespace node that is missing (being
// purged) gets version -1, which no write checks: a renewal is then lost.
func (s *slotStore) guardVersions(ctx context.Context, ns string, a *attempts) (g guard, sealed bool, err error) {
	path := s.nsPath(ns)
	seen := s.nsSealSeen(path)
	rs, err := s.getNodes(ctx, []string{s.root, path}, a)
	if err != nil {
		return guard{}, false, err
	}
	if rs[0].err != nil {
		return guard{}, false, fmt.Errorf("zookeeper: read %s: %w", s.root, rs[0].err)
	}
	g = guard{root: rs[0].stat.Version, ns: -1}
	switch {
	case errors.Is(rs[1].err, zk.ErrNoNode):
		return g, false, nil
	case rs[1].err != nil:
		return guard{}, false, fmt.Errorf("zookeeper: read %s: %w", path, rs[1].err)
	}
	if _, _, sealed, err = parseNamespace(rs[1].data); err != nil {
		return guard{}, false, corruptData(path, rs[1].data, err)
	}
	if err := s.guardNsSeal(path, seen, rs[1].stat.Czxid, sealed); err != nil {
		return guard{}, false, err
	}
	g.ns = rs[1].stat.Version
	return g, sealed, nil
}

// rewriteTerm compare-and-sets l's slot from st (the state last seen) to the
// node change makes of it, reading again after a conflict or an unknown
// outcome, as long as the slot holds l's term. settled, if set, may accept
// a node read after an unknown outcome as the write having happened; only
// a node written after the write was sent can be its result (its mzxid is
// above every one seen before), so that a term some earlier call released
// (a second Release, an older copy of the lease) is never taken for ours.
// A write some earlier call gave up on may have landed unseen, above that
// bound: until a write on the slot succeeds, nothing is settled so.
//
// A renewal (renew) also checks the namespace node's version it read before
// the slot (guard): a seal rewrites that node, so a renewal never lands
// after a seal returned; read again, the sealed namespace is ErrSealed. A
// release checks only the root: it still works in a sealed namespace.
func (s *slotStore) rewriteTerm(ctx context.Context, l driver.Lease, renew bool, change func(st *slotState) (slotNode, error),
	settled func(r slotRead) bool) (*slotState, error) {
	path := s.slotPath(l.Namespace, l.Slot)
	a := attempts{s: s.session}
	st := leaseState(l, path)
	var czxid int64
	if st != nil {
		czxid = st.czxid
	}
	unknown, abandoned := false, false // abandoned: an earlier call's write may yet land
	var sentAbove int64                // with unknown: the zxid seen before the first write whose outcome is unknown
	for {
		if st == nil {
			var r slotRead
			var err error
			st, r, err = s.currentTerm(ctx, l, czxid, renew, &a)
			if err != nil {
				if unknown && !abandoned && settled != nil && errors.Is(err, driver.ErrLeaseLost) && !errors.Is(err, driver.ErrRecreated) &&
					r.stat.Mzxid > sentAbove && settled(r) {
					return nil, nil
				}
				if unknown && !errors.Is(err, driver.ErrLeaseLost) {
					s.abandonSlotWrite(path, settled) // our write may still land
				}
				return nil, err
			}
			czxid = st.czxid
		}
		if err := checkVersion(path, st.version); err != nil {
			return nil, err
		}
		node, err := change(st)
		if err != nil {
			return nil, fmt.Errorf("zookeeper: %s: %w", path, err)
		}
		data, version := formatSlot(node), st.version
		seen := s.slotZxid.Load()
		_, gaveUp := s.slotAbandoned.Load(path)
		// With the root's version checked: a purge rewrites the root
		// before it deletes, so the write never lands on a node recreated
		// since st was read, even one at the same version.
		g := st.guard
		ops := []any{&zk.CheckVersionRequest{Path: s.root, Version: g.root}}
		if renew {
			if err := checkVersion(s.nsPath(l.Namespace), g.ns); err != nil {
				return nil, err
			}
			ops = append(ops, &zk.CheckVersionRequest{Path: s.nsPath(l.Namespace), Version: g.ns})
		}
		ops = append(ops, &zk.SetDataRequest{Path: path, Data: data, Version: version})
		res, err := call(ctx, s, func() ([]zk.MultiResponse, error) { return s.conn.Multi(ops...) })
		var stat *zk.Stat
		if err == nil {
			if len(res) != len(ops) || res[len(ops)-1].Stat == nil {
				return nil, fmt.Errorf("zookeeper: write %s answered %d results, want %d with a Stat", path, len(res), len(ops))
			}
			stat = res[len(ops)-1].Stat
		}
		switch {
		case err == nil:
			s.seeSlotZxid(stat.Mzxid)
			s.slotAbandoned.Delete(path) // written over: an abandoned write can no longer land
			if stat.Czxid != st.czxid {
				// Recreated to the very version seen: the write landed on
				// another node, and cannot be taken back.
				return nil, fmt.Errorf("zookeeper: %s was deleted and recreated (czxid %#x, was %#x): %w (%w)",
					path, stat.Czxid, st.czxid, driver.ErrLeaseLost, driver.ErrRecreated)
			}
			s.marks.saw(path, node)
			return newSlotState(path, node, stat, g), nil
		case errors.Is(err, zk.ErrBadVersion):
			st = nil // written meanwhile, a purge began or a seal: is the term still ours?
		case errors.Is(err, zk.ErrNoNode):
			return nil, fmt.Errorf("zookeeper: %s was deleted: %w (%w)", path, driver.ErrLeaseLost, driver.ErrRecreated)
		default:
			if err := a.retry(ctx, err); err != nil {
				s.abandonSlotWrite(path, settled)
				return nil, fmt.Errorf("zookeeper: write %s: outcome unknown: %w", path, err)
			}
			if !unknown {
				sentAbove, abandoned = seen, gaveUp
			}
			st, unknown = nil, true
		}
	}
}

// abandonSlotWrite remembers a write on path given up with its outcome
// unknown, if it could be taken for a later call's (it has a settled rule:
// a Release's; a Renew's leaves the term held, never settles anything).
func (s *slotStore) abandonSlotWrite(path string, settled func(r slotRead) bool) {
	if settled != nil {
		s.slotAbandoned.Store(path, true)
	}
}

// Renew extends l's term, even after its expiry if nobody took the slot:
// one compare-and-set on the version the lease carries. The node's current
// expiry and ceiling become the term's lower bounds, so neither goes back;
// the lease's own times are only checked (driver.SlotRecord.Agrees).
func (s *slotStore) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	if err := checkPathText("namespace", l.Namespace, "owner", l.Owner); err != nil {
		return l, err
	}
	st, err := s.rewriteTerm(ctx, l, true, func(st *slotState) (slotNode, error) {
		r, err := st.node.record(st.mtime).Renewed(l, 0) // the write's mtime is the new Written
		return st.node.withRecord(r), err
	}, nil)
	if err != nil {
		return l, err
	}
	return st.lease(l.Namespace, l.Slot), nil
}

// Release ends l's term; used < 0 means unknown. The term's floors, bounds
// and fence stay in the node for the next term.
func (s *slotStore) Release(ctx context.Context, l driver.Lease, used int64) error {
	if err := checkPathText("namespace", l.Namespace, "owner", l.Owner); err != nil {
		return err
	}
	_, err := s.rewriteTerm(ctx, l, false, func(st *slotState) (slotNode, error) {
		r, err := st.node.record(st.mtime).Released(l, used, 0)
		return st.node.withRecord(r), err
	}, func(r slotRead) bool {
		// After an unknown outcome, the term released with this owner and
		// fence: only the term's holder (this incarnation) or a seed,
		// which sets a next floor at least as high, release it so.
		return r.exists && r.node.owner == "" && r.node.lastOwner == l.Owner && r.node.fence == l.Fence
	})
	return err
}
