package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// Slot leases (docs/design.md, Slot leases), on these nodes (ZooKeeper node layout):
//
//	{root}/slot/{ns}              limit=..., tolerance=..., sealed=true once sealed
//	{root}/slot/{ns}/.clock       empty; written by the acquires of earlier versions
//	{root}/slot/{ns}/{slot}       the slot's name=value lines (slot_codec.go)
//	{root}/owner/{ns}/{owner}     the owner's last slots, most recent first
//	{root}/clock/{session}        ephemeral, one per session: its store's acquires
//	                              and seeds write it; the mtime is their now
//
// Every lease time comes from the mtime the server stamped on a write, never
// from this process's clock.
//
// This file holds the slot nodes, their paths, how they are read and how a
// namespace is made; an acquire is in slot_acquire.go, renew and release
// in slot_term.go, seeding in slot_seed.go, listings in slot_list.go, the
// fences a purge keeps in slot_fence.go, and the reads sent in one round
// trip in wire_trip.go.

var (
	_ driver.SlotLeaseStore = (*slotStore)(nil)
	_ driver.SlotSeeder     = (*slotStore)(nil)
)

// slotStore is the store's driver.SlotLeaseStore and driver.SlotSeeder.
type slotStore struct {
	*session

	slotTurns     slotTurnMap  // acquires take turns per namespace (slot_acquire.go)
	slotZxid      atomic.Int64 // the highest mzxid of a slot node read or written (see seeSlotZxid)
	slotAbandoned sync.Map     // slot paths with a Release's write given up before its outcome was known (rewriteTerm)
	clockMade     atomic.Int64 // the session whose clock node this store made or found (tripClock)
	marks         slotMarks    // the furthest state of each slot node seen (slot_guard.go)
	nsSealed      sync.Map     // namespace node path -> czxid of the node seen sealed (slot_nsguard.go)
}

// clockName is the child of a namespace node whose mtime was an acquire's
// now before each session had a clock node of its own (clockPath). It is
// still made with each namespace, for stores of earlier versions.
const clockName = ".clock"

// clockDir is the parent of the sessions' clock nodes (clockPath).
const clockDir = "clock"

// clockPath is the clock node of session sid: an ephemeral node that the
// store's acquires and seeds write, and whose mtime is then their now. A
// node no other store writes: when every acquire wrote its namespace's
// .clock, a fleet acquiring at once queued on that one node. It goes with
// the session; a new session makes another.
func (s *slotStore) clockPath(sid int64) string {
	return fmt.Sprintf("%s/%s/%016x", s.root, clockDir, uint64(sid))
}

// tripClock writes the clock node of the session sid (clockPath), the
// answer's Stat carrying the write's mtime: a set, once the store knows the
// node is there (clockMade), else a multi that creates it and sets it, so
// that a session's first acquire writes once too.
func (s *slotStore) tripClock(sid int64) func() tripReply {
	path := s.clockPath(sid)
	if s.clockMade.Load() == sid {
		return func() tripReply {
			stat, err := s.conn.Set(path, nil, -1)
			if errors.Is(err, zk.ErrNoNode) {
				s.clockMade.CompareAndSwap(sid, 0) // deleted by a purge: made again
			}
			return tripReply{stat: stat, err: err}
		}
	}
	return func() tripReply {
		res, err := s.conn.Multi(
			&zk.CreateRequest{Path: path, Acl: s.acl, Flags: zk.FlagEphemeral},
			&zk.SetDataRequest{Path: path, Version: 0})
		switch {
		case err == nil && len(res) == 2 && res[1].Stat != nil:
			s.clockMade.Store(sid)
			return tripReply{stat: res[1].Stat}
		case err == nil:
			return tripReply{err: fmt.Errorf("zookeeper: create %s answered %d results, want 2 with a Stat", path, len(res))}
		case errors.Is(err, zk.ErrNodeExists):
			// Made by a create whose answer was lost: set it next time.
			s.clockMade.Store(sid)
		}
		return tripReply{err: err}
	}
}

func (s *slotStore) nsPath(ns string) string          { return s.root + "/slot/" + ns }
func (s *slotStore) slotPath(ns string, n int) string { return s.nsPath(ns) + "/" + strconv.Itoa(n) }
func (s *slotStore) ownerPath(ns, owner string) string {
	return s.root + "/owner/" + ns + "/" + owner
}

// slotState is a lease's driver state: the slot node as the store last
// wrote or read it, so that Renew and Release can compare-and-set without
// reading first. It is never changed once made: leases are copied freely.
type slotState struct {
	path    string
	czxid   int64 // the node's identity: a node recreated at the path is another
	version int32
	guard
	mtime int64
	node  slotNode
}

// guard is the versions of two nodes, read before a slot node, that a
// write of the slot checks:
//   - root: a purge rewrites the root before deleting, so a write checking
//     it cannot land on a node recreated since, even one at the same version;
//   - ns, the namespace node's: a seal rewrites it, so an acquire's or a
//     renewal's write checking it cannot land after a seal returned.
type guard struct{ root, ns int32 }

func newSlotState(path string, node slotNode, stat *zk.Stat, g guard) *slotState {
	return &slotState{path: path, czxid: stat.Czxid, version: stat.Version, mtime: stat.Mtime, node: node, guard: g}
}

func (st *slotState) lease(ns string, slot int) driver.Lease {
	l := st.node.record(st.mtime).Lease(ns, slot)
	l.State = st
	return l
}

// slotRead is a slot node as read.
type slotRead struct {
	n      int
	path   string
	exists bool
	node   slotNode
	stat   zk.Stat
	bad    error // the data does not parse, or went back (ErrCorrupt): the node is never written

	seenFence int64 // the highest fence this store saw the node hold before the read
}

// state is r as a lease's state; g holds the versions read before r.
func (r slotRead) state(g guard) *slotState { return newSlotState(r.path, r.node, &r.stat, g) }

// record is the slot as a driver.SlotRecord. A slot never used has only a
// fence: its namespace's fence floor (non-zero after a purge, see Purge).
func (r slotRead) record(fenceFloor int64) driver.SlotRecord {
	if !r.exists {
		return driver.SlotRecord{Fence: fenceFloor}
	}
	return r.node.record(r.stat.Mtime)
}

// readSlots reads slots nums of ns in one round trip (more only to retry
// transient failures). A missing node is a slot never used; data that does
// not parse, or a node behind what this store saw of it (slot_guard.go),
// is reported in the slot's bad, not as an error, so that an acquire can
// pass over it. A node behind is read again after a sync before it is
// refused.
func (s *slotStore) readSlots(ctx context.Context, ns string, nums []int, a *attempts) ([]slotRead, error) {
	paths := make([]string, len(nums))
	for i, n := range nums {
		paths[i] = s.slotPath(ns, n)
	}
	for synced := false; ; synced = true {
		marks := s.marks.marksOf(paths)
		out := make([]slotRead, len(nums))
		for i, n := range nums {
			out[i] = slotRead{n: n, path: paths[i], seenFence: marks[i].Fence()}
		}
		rs, err := s.getNodes(ctx, paths, a)
		if err != nil {
			return nil, err
		}
		for i, r := range rs {
			if r.err == nil {
				s.seeSlotZxid(r.stat.Mzxid)
				out[i].exists, out[i].stat = true, *r.stat
				out[i].node, out[i].bad = decodeSlot(paths[i], r.data)
			}
		}
		if !s.guardReads(out, marks) || synced {
			return out, nil
		}
		if err := s.sync(ctx, s.root, a); err != nil {
			return nil, err
		}
	}
}

// seeSlotZxid records the mzxid of a slot node read or written. The highest
// is a lower bound of the server's zxid: a write sent later that lands gets
// a higher one, which tells it from a write made before (rewriteTerm).
func (s *slotStore) seeSlotZxid(z int64) {
	for {
		old := s.slotZxid.Load()
		if z <= old || s.slotZxid.CompareAndSwap(old, z) {
			return
		}
	}
}

func (s *slotStore) readSlot(ctx context.Context, ns string, n int, a *attempts) (slotRead, error) {
	rs, err := s.readSlots(ctx, ns, []int{n}, a)
	if err != nil {
		return slotRead{}, err
	}
	return rs[0], nil
}

func decodeSlot(path string, data []byte) (slotNode, error) {
	n, err := parseSlot(data)
	if err != nil {
		return slotNode{}, corruptData(path, data, err)
	}
	return n, nil
}

// ownerIndex is an owner's index node as read.
type ownerIndex struct {
	exists  bool
	version int32
	slots   []int
}

// clockIn is the first round trip of an acquire (and of a seed): it writes
// the session's clock node (clockPath), whose mtime becomes now, and reads
// the namespace node and, unless owner is "", the owner's index, all at
// once. A missing namespace is created with ns's settings; a sealed one is
// ErrSealed, different settings are ErrConfigMismatch.
//
// The clock write is unconditional on purpose: it carries only time, and
// a write (not a read) gives a now no older than this acquire, so an
// expiry is never judged on a stale clock. If root is not nil, the root's
// and the namespace node's versions go into it (see guard).
func (s *slotStore) clockIn(ctx context.Context, ns driver.Namespace, owner string, root *guard, a *attempts) (now, fenceFloor int64, idx ownerIndex, err error) {
	nsPath := s.nsPath(ns.Name)
	idxPath := s.ownerPath(ns.Name, owner)
	for {
		sid := s.conn.SessionID() // may change between passes
		clock := s.clockPath(sid)
		seen := s.nsSealSeen(nsPath)
		ops := []func() tripReply{s.tripClock(sid), s.tripGet(nsPath)}
		if owner != "" {
			ops = append(ops, s.tripGet(idxPath))
		}
		if root != nil {
			ops = append(ops, s.tripGet(s.root))
		}
		rs, err := inOneTrip(ctx, s, ops...)
		if err != nil {
			return 0, 0, ownerIndex{}, err
		}
		if err := firstTransient(rs); err != nil {
			if err := a.retry(ctx, err); err != nil {
				return 0, 0, ownerIndex{}, fmt.Errorf("zookeeper: write %s: %w", clock, err)
			}
			continue
		}
		nsr := rs[1]
		switch {
		case errors.Is(nsr.err, zk.ErrNoNode):
			if err := s.createNamespace(ctx, ns, false, a); err != nil {
				return 0, 0, ownerIndex{}, err
			}
			continue
		case nsr.err != nil:
			return 0, 0, ownerIndex{}, fmt.Errorf("zookeeper: read %s: %w", nsPath, nsr.err)
		}
		limit, tol, sealed, perr := parseNamespace(nsr.data)
		if perr == nil {
			fenceFloor, perr = parseFenceFloor(nsr.data, fieldFenceFloor)
		}
		if perr != nil {
			return 0, 0, ownerIndex{}, corruptData(nsPath, nsr.data, perr)
		}
		if err := s.guardNsSeal(nsPath, seen, nsr.stat.Czxid, sealed); err != nil {
			return 0, 0, ownerIndex{}, err
		}
		if sealed {
			return 0, 0, ownerIndex{}, sealedErr(nsPath)
		}
		if err := checkVersion(nsPath, nsr.stat.Version); err != nil {
			return 0, 0, ownerIndex{}, err
		}
		if limit != ns.Limit || tol != ns.Tolerance.Milliseconds() {
			return 0, 0, ownerIndex{}, fmt.Errorf("zookeeper: namespace %s has limit %d and tolerance %v, not limit %d and tolerance %v: %w",
				nsPath, limit, time.Duration(tol)*time.Millisecond, ns.Limit, ns.Tolerance, driver.ErrConfigMismatch)
		}
		switch cr := rs[0]; {
		case errors.Is(cr.err, zk.ErrNodeExists):
			continue // made by an earlier create: set next pass
		case errors.Is(cr.err, zk.ErrNoNode):
			// The clock directory is missing (the first session under this
			// root, or after a purge), or a purge deleted the node.
			if err := s.createParents(ctx, clock, a); err != nil {
				return 0, 0, ownerIndex{}, err
			}
			continue
		case cr.err != nil:
			return 0, 0, ownerIndex{}, fmt.Errorf("zookeeper: write %s: %w", clock, cr.err)
		}
		now = rs[0].stat.Mtime
		if root != nil {
			rr := rs[len(rs)-1]
			if rr.err != nil {
				return 0, 0, ownerIndex{}, fmt.Errorf("zookeeper: read %s: %w", s.root, rr.err)
			}
			*root = guard{root: rr.stat.Version, ns: nsr.stat.Version}
		}
		if owner == "" {
			return now, fenceFloor, ownerIndex{}, nil
		}
		idx, err = decodeOwnerIndex(idxPath, rs[2])
		return now, fenceFloor, idx, err
	}
}

func decodeOwnerIndex(path string, r tripReply) (ownerIndex, error) {
	switch {
	case errors.Is(r.err, zk.ErrNoNode):
		return ownerIndex{}, nil
	case r.err != nil:
		return ownerIndex{}, fmt.Errorf("zookeeper: read %s: %w", path, r.err)
	}
	slots, err := parseOwnerIndex(r.data)
	if err != nil {
		// The index is only a hint, but the store does not overwrite what it
		// cannot read; deleting the node is always safe.
		return ownerIndex{}, corruptData(path, r.data, err)
	}
	return ownerIndex{exists: true, version: r.stat.Version, slots: slots}, nil
}

// readOwnerIndex reads an owner's index alone, after a concurrent write to it.
func (s *slotStore) readOwnerIndex(ctx context.Context, path string, a *attempts) (ownerIndex, error) {
	for {
		rs, err := inOneTrip(ctx, s, s.tripGet(path))
		if err != nil {
			return ownerIndex{}, err
		}
		if retryable(rs[0].err) {
			if err := a.retry(ctx, rs[0].err); err != nil {
				return ownerIndex{}, fmt.Errorf("zookeeper: read %s: %w", path, err)
			}
			continue
		}
		return decodeOwnerIndex(path, rs[0])
	}
}

// createNamespace creates a namespace node with its .clock, and the parents
// they need; sealed, if asked. A namespace another store created meanwhile
// is fine: the caller reads it again and compares the settings.
func (s *slotStore) createNamespace(ctx context.Context, ns driver.Namespace, sealed bool, a *attempts) error {
	path := s.nsPath(ns.Name)
	floor, rootVersion, err := s.rootFenceFloor(ctx, a)
	if err != nil {
		return err
	}
	data := formatNamespace(ns.Limit, ns.Tolerance.Milliseconds())
	if floor > 0 {
		data = fmt.Appendf(data, "%s=%d\n", fieldFenceFloor, floor)
	}
	if sealed {
		data = append(data, sealedLine...)
	}
	// With the parent of its slots' markers (slot_made.go), so that the
	// first acquire's multi finds it, unless it is there already.
	made := s.madeDirPath(ns.Name)
	withMade := true
	for {
		var ops []any
		if rootVersion != -1 {
			// A purge raises the floor (rewriting the root) before it
			// deletes: a namespace made after it must not have the floor
			// read before it.
			ops = append(ops, &zk.CheckVersionRequest{Path: s.root, Version: rootVersion})
		}
		first := len(ops)
		ops = append(ops,
			&zk.CreateRequest{Path: path, Data: data, Acl: s.acl},
			&zk.CreateRequest{Path: path + "/" + clockName, Acl: s.acl})
		if withMade {
			ops = append(ops, &zk.CreateRequest{Path: made, Acl: s.acl})
		}
		res, err := call(ctx, s, func() ([]zk.MultiResponse, error) { return s.conn.Multi(ops...) })
		failed := slices.IndexFunc(res, func(r zk.MultiResponse) bool { return r.Error != nil })
		switch {
		case err != nil && failed == 0 && first == 1:
			return nil // the root changed (a purge?): the caller reads again, and makes it with the floor then
		case withMade && err != nil && failed == first+2:
			// The markers' parent is there already, or its own parent is
			// missing: the namespace alone, with the parents made first.
			withMade = false
			if errors.Is(err, zk.ErrNoNode) {
				if err := s.createParents(ctx, made+"/", a); err != nil && !errors.Is(err, zk.ErrNoNode) {
					return err // (a purge under way: the acquire makes it later)
				}
			}
			continue
		case err == nil, errors.Is(err, zk.ErrNodeExists):
			return nil
		case errors.Is(err, zk.ErrNoNode) && rootVersion != -1:
			// {root}/slot and {root}/made, as after a purge: one trip.
			if err := s.createChildren(ctx, a, s.root+"/slot", s.root+"/"+madeDir); err != nil {
				return err
			}
			continue
		case errors.Is(err, zk.ErrNoNode):
			if err := s.createParents(ctx, path, a); err != nil {
				return err
			}
			continue
		}
		// An unknown outcome is settled by the caller's next read.
		if err := a.retry(ctx, err); err != nil {
			return fmt.Errorf("zookeeper: create %s: %w", path, err)
		}
		return nil
	}
}
