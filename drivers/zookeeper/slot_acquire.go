package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// Batch sizes of the search for a free slot from the acquire's own point:
// small first, since a free slot is most likely near it (a fleet's
// acquirers spread over the namespace), then 4 times larger each, up to
// 256, so that a namespace of 1024 slots is read in 7 round trips.
const (
	firstSlotBatch = 4
	maxSlotBatch   = 256
)

// slotTurnMap serializes a store's acquires (and seeds) per namespace: goroutines
// of one process, which share an incarnation and so a search start, take
// turns rather than race each other for the same free slot and lose most
// compare-and-sets. The zero value is ready.
type slotTurnMap struct {
	mu  sync.Mutex
	sem map[string]chan struct{}
}

func (s *slotStore) takeSlotTurn(ctx context.Context, ns string) (func(), error) {
	t := &s.slotTurns
	t.mu.Lock()
	if t.sem == nil {
		t.sem = map[string]chan struct{}{}
	}
	sem := t.sem[ns]
	if sem == nil {
		sem = make(chan struct{}, 1)
		t.sem[ns] = sem
	}
	t.mu.Unlock()
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.closing:
		return nil, driver.ErrClosed
	}
}

// acquisition is one Acquire in progress.
type acquisition struct {
	s          *slotStore
	req        driver.AcquireRequest
	a          attempts
	now        int64 // mtime of this acquire's .clock write
	fenceFloor int64 // the namespace's: never-used slots start above it
	guard      guard // the root's and the namespace's versions, read before any slot
	index      ownerIndex
	passed     map[int]error // slots passed over, and why
}

// Acquire leases a slot of req.Namespace in the round trips of
// docs/design.md (ZooKeeper node layout):
// (1) write .clock, read the namespace and the owner's index; (2) read the
// owner's last slots and the preferred slot; (3) if none of them is free,
// read the slots from the acquire's own point in batches of 4, 16, 64,
// 256, 256, ... until one is (search); (4)
// one multi that compare-and-sets (or creates) the slot and writes the
// owner's index. A slot lost to a concurrent acquire is read again and the
// search goes on.
func (s *slotStore) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	if err := checkPathText("namespace", req.Namespace.Name, "owner", req.Owner); err != nil {
		return driver.Lease{}, err
	}
	done, err := s.takeSlotTurn(ctx, req.Namespace.Name)
	if err != nil {
		return driver.Lease{}, err
	}
	defer done()
	q := &acquisition{s: s, req: req, a: attempts{s: s.session}, passed: map[int]error{}}
	q.now, q.fenceFloor, q.index, err = s.clockIn(ctx, req.Namespace, req.Owner, &q.guard, &q.a)
	if err != nil {
		return driver.Lease{}, err
	}

	limit := req.Namespace.Limit
	first := driver.FirstSlots(q.index.slots, req.Preferred, limit)
	reads, err := s.readSlots(ctx, req.Namespace.Name, first, &q.a)
	if err != nil {
		return driver.Lease{}, err
	}
	// A live term of this owner and incarnation wins over the order: a
	// retried acquire must get the term it already has.
	for _, r := range reads {
		if q.judge(r) == driver.SlotOwn {
			return r.state(q.guard).lease(req.Namespace.Name, r.n), nil
		}
	}
	for _, r := range reads {
		if l, ok, err := q.try(ctx, r); ok || err != nil {
			return l, err
		}
	}

	return q.search(ctx, first)
}

// search reads the slots other than first in batches of 4, 16, 64, 256,
// 256, ... in driver.SearchOrder from the acquire's own point
// (driver.SearchStart) until one is free, so that a fleet acquiring at
// once spreads over the namespace instead of all racing for one slot.
func (q *acquisition) search(ctx context.Context, first []int) (driver.Lease, error) {
	limit := q.req.Namespace.Limit
	order := slices.Collect(driver.SearchOrder(driver.SearchStart(q.req.Owner, q.req.Incarnation, limit), limit))
	for i, size := 0, firstSlotBatch; i < limit; i, size = i+size, min(4*size, maxSlotBatch) {
		batch := slices.DeleteFunc(slices.Clone(order[i:min(i+size, limit)]), func(n int) bool { return slices.Contains(first, n) })
		if len(batch) == 0 {
			continue
		}
		reads, err := q.s.readSlots(ctx, q.req.Namespace.Name, batch, &q.a)
		if err != nil {
			return driver.Lease{}, err
		}
		for _, r := range reads {
			if l, ok, err := q.try(ctx, r); ok || err != nil {
				return l, err
			}
		}
	}
	return driver.Lease{}, q.exhausted()
}

// judge decides what the acquire may do with slot r (driver.SlotRecord's
// Judge). A slot whose data does not parse, whose fence cannot grow, or
// whose node is at version -1 is passed over, and named if the acquire
// finds no free slot.
func (q *acquisition) judge(r slotRead) driver.SlotVerdict {
	if r.bad != nil {
		q.passed[r.n] = r.bad
		return driver.SlotBusy
	}
	if !r.exists && r.seenFence > q.fenceFloor {
		// Deleted by hand: a purge raises the fence floor past every fence
		// it deletes.
		q.passed[r.n] = fmt.Errorf("zookeeper: %s is gone, and this store saw it at fence %d (the namespace's fence floor is %d): "+
			"deleted by hand, or a restored backup: %w", r.path, r.seenFence, q.fenceFloor, driver.ErrCorrupt)
		return driver.SlotBusy
	}
	v, err := r.record(q.fenceFloor).Judge(q.req, q.now)
	switch {
	case err != nil:
		q.passed[r.n] = fmt.Errorf("zookeeper: %s: %w", r.path, err)
	case v == driver.SlotFree && r.exists && r.stat.Version == -1:
		q.passed[r.n] = checkVersion(r.path, -1)
		return driver.SlotBusy
	}
	return v
}

// try takes slot r if it is free, or returns the requester's own live term.
// A lost race or an unknown outcome reads the slot again and judges anew.
func (q *acquisition) try(ctx context.Context, r slotRead) (driver.Lease, bool, error) {
	for {
		switch q.judge(r) {
		case driver.SlotBusy:
			return driver.Lease{}, false, nil
		case driver.SlotOwn:
			return r.state(q.guard).lease(q.req.Namespace.Name, r.n), true, nil
		}
		st, again, err := q.take(ctx, r)
		if err != nil || st != nil {
			if err != nil {
				return driver.Lease{}, false, err
			}
			return st.lease(q.req.Namespace.Name, r.n), true, nil
		}
		r = again
	}
}

// take writes a new term on slot r and the owner's index in one multi. It
// returns the new term's state, or the slot read again (after a lost race
// or an unknown outcome), or an error.
func (q *acquisition) take(ctx context.Context, r slotRead) (*slotState, slotRead, error) {
	s := q.s
	node := r.node.withRecord(r.record(q.fenceFloor).NewTerm(q.req, q.now))
	ops, slotOps, err := q.termOps(r, node)
	if err != nil {
		return nil, r, err
	}
	res, err := call(ctx, s, func() ([]zk.MultiResponse, error) { return s.conn.Multi(ops...) })
	switch {
	case err == nil:
		if len(res) != len(ops) || res[slotOps-1].Stat == nil {
			return nil, r, fmt.Errorf("zookeeper: %s: acquire answered %d results, want %d with a Stat", r.path, len(res), len(ops))
		}
		s.marks.saw(r.path, node)
		return newSlotState(r.path, node, res[slotOps-1].Stat, q.guard), r, nil
	case definite(err):
		again, err := q.refused(ctx, r, res, slotOps, err)
		return nil, again, err
	}
	return q.settle(ctx, r, node, err)
}

// termOps returns the operations of take's multi: the slot's compare-and-set
// (or create) first, slotOps of them, then the owner index's write, then
// the check of the namespace node's version (a seal rewrites it), and last,
// with a create, the create of the slot's marker (slot_made.go).
func (q *acquisition) termOps(r slotRead, node slotNode) (ops []any, slotOps int, err error) {
	s := q.s
	data := formatSlot(node)
	if r.exists {
		ops = append(ops, &zk.SetDataRequest{Path: r.path, Data: data, Version: r.stat.Version})
	} else {
		// go-zookeeper's create answers only a path; a set-data of the same
		// data in the same multi answers the Stat, with the mtime the
		// lease's times come from.
		ops = append(ops,
			&zk.CreateRequest{Path: r.path, Data: data, Acl: s.acl},
			&zk.SetDataRequest{Path: r.path, Data: data, Version: 0})
	}
	slotOps = len(ops)
	idxPath := s.ownerPath(q.req.Namespace.Name, q.req.Owner)
	idxData := formatOwnerIndex(driver.RememberSlot(q.index.slots, r.n))
	if !q.index.exists {
		ops = append(ops, &zk.CreateRequest{Path: idxPath, Data: idxData, Acl: s.acl})
	} else {
		if err := checkVersion(idxPath, q.index.version); err != nil {
			return nil, 0, err
		}
		ops = append(ops, &zk.SetDataRequest{Path: idxPath, Data: idxData, Version: q.index.version})
	}
	ops = append(ops, &zk.CheckVersionRequest{Path: s.nsPath(q.req.Namespace.Name), Version: q.guard.ns})
	if !r.exists {
		ops = append(ops, s.madeOp(q.req.Namespace.Name, r.n)) // slot_made.go
	}
	return ops, slotOps, nil
}

// refused handles a multi that was refused, so nothing of it was applied.
// The first failed operation says why (those before it report no error,
// those after it a rollback). It returns slot r, read again if the slot
// changed, for take's caller to judge anew.
func (q *acquisition) refused(ctx context.Context, r slotRead, res []zk.MultiResponse, slotOps int, err error) (slotRead, error) {
	s, ns := q.s, q.req.Namespace.Name
	idxPath := s.ownerPath(ns, q.req.Owner)
	failed := slices.IndexFunc(res, func(op zk.MultiResponse) bool { return op.Error != nil })
	made := !r.exists && failed == slotOps+2 // the marker's create failed
	switch {
	case made && errors.Is(err, zk.ErrNodeExists):
		r.bad = s.unmadeErr(ns, r.n) // judged busy, and named if none is free
		return r, nil
	case made && errors.Is(err, zk.ErrNoNode):
		if err := s.createParents(ctx, s.madePath(ns, r.n), &q.a); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return r, err
		}
		return r, nil // (a purge under way: the next multi fails on the namespace)
	case failed == slotOps+1 && errors.Is(err, zk.ErrNoNode):
		return r, fmt.Errorf("zookeeper: %s was deleted during an acquire: %w", s.nsPath(ns), driver.ErrNotFound)
	case failed == slotOps+1:
		// The namespace node changed: sealed, most likely.
		return r, q.namespaceAgain(ctx)
	case failed >= slotOps && errors.Is(err, zk.ErrNoNode) && !q.index.exists:
		// The owner directory of the namespace is missing.
		return r, s.createParents(ctx, idxPath, &q.a)
	case failed >= slotOps:
		// Another acquire of the same owner key wrote the index.
		q.index, err = s.readOwnerIndex(ctx, idxPath, &q.a)
		return r, err
	case failed == 0 && !r.exists && errors.Is(err, zk.ErrNoNode):
		return r, fmt.Errorf("zookeeper: %s was deleted during an acquire: %w", s.nsPath(ns), driver.ErrNotFound)
	case failed >= 0 && (errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode)):
		// Lost the slot to a concurrent write: read it again.
		return s.readSlot(ctx, ns, r.n, &q.a)
	}
	return r, fmt.Errorf("zookeeper: acquire %s: %w", r.path, err)
}

// namespaceAgain reads the namespace node after an acquire's check of its
// version failed: a sealed namespace is ErrSealed; otherwise the acquire
// goes on, checking the version read now.
func (q *acquisition) namespaceAgain(ctx context.Context) error {
	path := q.s.nsPath(q.req.Namespace.Name)
	seen := q.s.nsSealSeen(path)
	rs, err := q.s.getNodes(ctx, []string{path}, &q.a)
	if err != nil {
		return err
	}
	if rs[0].err != nil {
		return fmt.Errorf("zookeeper: read %s: %w", path, rs[0].err)
	}
	_, _, sealed, err := parseNamespace(rs[0].data)
	if err == nil {
		err = q.s.guardNsSeal(path, seen, rs[0].stat.Czxid, sealed)
	}
	switch {
	case errors.Is(err, driver.ErrCorrupt):
		return err
	case err != nil:
		return corruptData(path, rs[0].data, err)
	case sealed:
		return sealedErr(path)
	}
	q.guard.ns = rs[0].stat.Version
	return checkVersion(path, q.guard.ns)
}

// settle decides a multi whose outcome is unknown: it may or may not have
// been applied. Only the slot's data can tell: if it holds the term written
// here (owner, incarnation and fence), the term is this acquire's.
func (q *acquisition) settle(ctx context.Context, r slotRead, node slotNode, err error) (*slotState, slotRead, error) {
	if err := q.a.retry(ctx, err); err != nil {
		return nil, r, fmt.Errorf("zookeeper: acquire %s: outcome unknown: %w", r.path, err)
	}
	again, err := q.s.readSlot(ctx, q.req.Namespace.Name, r.n, &q.a)
	if err != nil {
		return nil, r, err
	}
	if again.exists && again.bad == nil && again.record(0).Holds(driver.Lease{Owner: node.owner, Incarnation: node.incarnation, Fence: node.fence}) {
		return again.state(q.guard), again, nil
	}
	return nil, again, nil
}

// exhausted is the error of an acquire that found no free slot. Slots it
// passed over because they are unusable are named: an operator must repair
// them, and until then they are never overwritten.
func (q *acquisition) exhausted() error {
	ns := q.s.nsPath(q.req.Namespace.Name)
	if len(q.passed) == 0 {
		return fmt.Errorf("zookeeper: all %d slots of %s are held: %w", q.req.Namespace.Limit, ns, driver.ErrExhausted)
	}
	nums := make([]int, 0, len(q.passed))
	for n := range q.passed {
		nums = append(nums, n)
	}
	slices.Sort(nums)
	var why []string
	anyCorrupt := false
	for _, n := range nums {
		why = append(why, q.passed[n].Error())
		anyCorrupt = anyCorrupt || errors.Is(q.passed[n], driver.ErrCorrupt)
	}
	msg := fmt.Sprintf("zookeeper: no free slot among the %d of %s; passed over %d unusable: %s",
		q.req.Namespace.Limit, ns, len(nums), strings.Join(why, "; "))
	if anyCorrupt {
		return fmt.Errorf("%s: %w (%w)", msg, driver.ErrExhausted, driver.ErrCorrupt)
	}
	return fmt.Errorf("%s: %w", msg, driver.ErrExhausted)
}
