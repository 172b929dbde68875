package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// Slot leases (SPEC 4), on the nodes of SPEC 6:
//
//	{root}/slot/{ns}              limit=..., tolerance=...
//	{root}/slot/{ns}/.clock       written by each acquire: its mtime is the acquire's now
//	{root}/slot/{ns}/{slot}       the slot's name=value lines (slotcodec.go)
//	{root}/owner/{ns}/{owner}     the owner's last slots, most recent first
//
// Every lease time comes from the mtime the server stamped on a write, never
// from this process's clock.

var (
	_ driver.SlotStore  = (*Store)(nil)
	_ driver.SlotSeeder = (*Store)(nil)
)

// clockName is the child of a namespace node whose mtime is an acquire's now.
const clockName = ".clock"

// Batch sizes of the search for the lowest free slot: small first, since a
// free slot is usually near the start, then growing so that a namespace of
// 1024 slots is read in 7 round trips.
const (
	firstSlotBatch = 32
	maxSlotBatch   = 256
)

// slotListChunk bounds the reads a listing sends at once.
const slotListChunk = 1024

func (s *Store) nsPath(ns string) string          { return s.root + "/slot/" + ns }
func (s *Store) slotPath(ns string, n int) string { return s.nsPath(ns) + "/" + strconv.Itoa(n) }
func (s *Store) ownerPath(ns, owner string) string {
	return s.root + "/owner/" + ns + "/" + owner
}

// slotState is a lease's driver state: the slot node as the store last
// wrote or read it, so that Renew and Release can compare-and-set without
// reading first. It is never changed once made: leases are copied freely.
type slotState struct {
	path    string
	czxid   int64 // the node's identity: a node recreated at the path is another
	version int32
	mtime   int64
	node    slotNode
}

func newSlotState(path string, node slotNode, stat *zk.Stat) *slotState {
	return &slotState{path: path, czxid: stat.Czxid, version: stat.Version, mtime: stat.Mtime, node: node}
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
	bad    error // the data does not parse (ErrCorrupt): the node is never written
}

func (r slotRead) state() *slotState { return newSlotState(r.path, r.node, &r.stat) }

// record is the slot as a driver.SlotRecord. A slot never used has only a
// fence: its namespace's fence floor (non-zero after a purge, see Purge).
func (r slotRead) record(fenceFloor int64) driver.SlotRecord {
	if !r.exists {
		return driver.SlotRecord{Fence: fenceFloor}
	}
	return r.node.record(r.stat.Mtime)
}

// tripReply is the answer to one go-zookeeper call of a round trip.
type tripReply struct {
	data     []byte
	children []string
	stat     *zk.Stat
	err      error
}

// inOneTrip runs go-zookeeper calls at once, each on a goroutine of its own:
// go-zookeeper writes the requests one after the other on the connection
// without waiting for answers, so they travel together, one round trip for
// all. It returns when every call has answered, or when ctx ends.
func inOneTrip(ctx context.Context, s *Store, ops ...func() tripReply) ([]tripReply, error) {
	return call(ctx, s, func() ([]tripReply, error) {
		out := make([]tripReply, len(ops))
		var wg sync.WaitGroup
		for i, op := range ops {
			wg.Go(func() { out[i] = op() })
		}
		wg.Wait()
		return out, nil
	})
}

func (s *Store) tripGet(path string) func() tripReply {
	return func() tripReply {
		data, stat, err := s.conn.Get(path)
		return tripReply{data: data, stat: stat, err: err}
	}
}

func (s *Store) tripChildren(path string) func() tripReply {
	return func() tripReply {
		names, stat, err := s.conn.Children(path)
		return tripReply{children: names, stat: stat, err: err}
	}
}

// readSlots reads slots nums of ns in one round trip (more only to retry
// transient failures). A missing node is a slot never used; data that does
// not parse is reported in the slot's bad, not as an error, so that an
// acquire can pass over it.
func (s *Store) readSlots(ctx context.Context, ns string, nums []int, a *attempts) ([]slotRead, error) {
	out := make([]slotRead, len(nums))
	paths := make([]string, len(nums))
	for i, n := range nums {
		paths[i] = s.slotPath(ns, n)
		out[i] = slotRead{n: n, path: paths[i]}
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
	return out, nil
}

// seeSlotZxid records the mzxid of a slot node read or written. The highest
// is a lower bound of the server's zxid: a write sent later that lands gets
// a higher one, which tells it from a write made before (rewriteTerm).
func (s *Store) seeSlotZxid(z int64) {
	for {
		old := s.slotZxid.Load()
		if z <= old || s.slotZxid.CompareAndSwap(old, z) {
			return
		}
	}
}

func (s *Store) readSlot(ctx context.Context, ns string, n int, a *attempts) (slotRead, error) {
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

func corruptData(path string, data []byte, why error) error {
	const show = 300
	q := strconv.Quote(string(data[:min(len(data), show)]))
	if len(data) > show {
		q += fmt.Sprintf("... (%d bytes)", len(data))
	}
	return fmt.Errorf("zookeeper: %s holds %s: %v: %w", path, q, why, driver.ErrCorrupt)
}

// checkSlotSegments refuses characters above U+FFFF in names that become path
// segments: ZooKeeper checks paths as UTF-16 and refuses the surrogates
// such a character becomes, with a bare "bad arguments".
func checkSlotSegments(what ...string) error {
	for i := 0; i+1 < len(what); i += 2 {
		for _, r := range what[i+1] {
			if r > 0xFFFF {
				return fmt.Errorf("zookeeper: %s %q contains %U: ZooKeeper refuses characters above U+FFFF in paths: %w",
					what[i], what[i+1], r, driver.ErrInvalidArgument)
			}
		}
	}
	return nil
}

// slotTurnMap serializes a store's acquires (and seeds) per namespace: goroutines
// of one process take turns rather than race each other for the same
// lowest free slot and lose most compare-and-sets. The zero value is ready.
type slotTurnMap struct {
	mu  sync.Mutex
	sem map[string]chan struct{}
}

func (s *Store) takeSlotTurn(ctx context.Context, ns string) (func(), error) {
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

// ownerIndex is an owner's index node as read.
type ownerIndex struct {
	exists  bool
	version int32
	slots   []int
}

// clockIn is the first round trip of an acquire (and of a seed): it writes
// the namespace's .clock, whose mtime becomes now, and reads the namespace
// node and, unless owner is "", the owner's index, all at once. A missing
// namespace is created with ns's settings; different settings are
// ErrConfigMismatch.
//
// The .clock write is unconditional on purpose: it carries only time, and
// a write (not a read) gives a now no older than this acquire.
func (s *Store) clockIn(ctx context.Context, ns driver.Namespace, owner string, a *attempts) (now, fenceFloor int64, idx ownerIndex, err error) {
	nsPath := s.nsPath(ns.Name)
	clock := nsPath + "/" + clockName
	idxPath := s.ownerPath(ns.Name, owner)
	for {
		ops := []func() tripReply{
			func() tripReply {
				stat, err := s.conn.Set(clock, nil, -1)
				return tripReply{stat: stat, err: err}
			},
			s.tripGet(nsPath),
		}
		if owner != "" {
			ops = append(ops, s.tripGet(idxPath))
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
			if err := s.createNamespace(ctx, ns, a); err != nil {
				return 0, 0, ownerIndex{}, err
			}
			continue
		case nsr.err != nil:
			return 0, 0, ownerIndex{}, fmt.Errorf("zookeeper: read %s: %w", nsPath, nsr.err)
		}
		limit, tol, perr := parseNamespace(nsr.data)
		if perr == nil {
			fenceFloor, perr = parseFenceFloor(nsr.data, fieldFenceFloor)
		}
		if perr != nil {
			return 0, 0, ownerIndex{}, corruptData(nsPath, nsr.data, perr)
		}
		if limit != ns.Limit || tol != ns.Tolerance.Milliseconds() {
			return 0, 0, ownerIndex{}, fmt.Errorf("zookeeper: namespace %s has limit %d and tolerance %v, not limit %d and tolerance %v: %w",
				nsPath, limit, time.Duration(tol)*time.Millisecond, ns.Limit, ns.Tolerance, driver.ErrConfigMismatch)
		}
		switch cr := rs[0]; {
		case errors.Is(cr.err, zk.ErrNoNode):
			// A namespace made by hand, or by an older layout.
			if err := s.createEmptyNode(ctx, clock, a); err != nil {
				return 0, 0, ownerIndex{}, err
			}
			continue
		case cr.err != nil:
			return 0, 0, ownerIndex{}, fmt.Errorf("zookeeper: write %s: %w", clock, cr.err)
		}
		now = rs[0].stat.Mtime
		if owner == "" {
			return now, fenceFloor, ownerIndex{}, nil
		}
		idx, err = decodeOwnerIndex(idxPath, rs[2])
		return now, fenceFloor, idx, err
	}
}

// firstTransient returns the first error of a round trip worth retrying.
func firstTransient(rs []tripReply) error {
	for _, r := range rs {
		if retryable(r.err) {
			return r.err
		}
	}
	return nil
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
func (s *Store) readOwnerIndex(ctx context.Context, path string, a *attempts) (ownerIndex, error) {
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
// they need. A namespace another store created meanwhile is fine: the
// caller reads it again and compares the settings.
func (s *Store) createNamespace(ctx context.Context, ns driver.Namespace, a *attempts) error {
	path := s.nsPath(ns.Name)
	floor, err := s.rootFenceFloor(ctx, a)
	if err != nil {
		return err
	}
	data := formatNamespace(ns.Limit, ns.Tolerance.Milliseconds())
	if floor > 0 {
		data = fmt.Appendf(data, "%s=%d\n", fieldFenceFloor, floor)
	}
	for {
		_, err := call(ctx, s, func() ([]zk.MultiResponse, error) {
			return s.conn.Multi(
				&zk.CreateRequest{Path: path, Data: data, Acl: s.acl},
				&zk.CreateRequest{Path: path + "/" + clockName, Acl: s.acl})
		})
		switch {
		case err == nil, errors.Is(err, zk.ErrNodeExists):
			return nil
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

// createEmptyNode creates an empty node whose parent exists; an existing node,
// or one whose parent vanished, is left for the caller's next read.
func (s *Store) createEmptyNode(ctx context.Context, path string, a *attempts) error {
	_, err := call(ctx, s, func() (string, error) { return s.conn.Create(path, nil, 0, s.acl) })
	switch {
	case err == nil, errors.Is(err, zk.ErrNodeExists), errors.Is(err, zk.ErrNoNode):
		return nil
	}
	if err := a.retry(ctx, err); err != nil {
		return fmt.Errorf("zookeeper: create %s: %w", path, err)
	}
	return nil
}

// acquisition is one Acquire in progress.
type acquisition struct {
	s          *Store
	req        driver.AcquireRequest
	a          attempts
	now        int64 // mtime of this acquire's .clock write
	fenceFloor int64 // the namespace's: never-used slots start above it
	index      ownerIndex
	passed     map[int]error // slots passed over, and why
}

// Acquire leases a slot of req.Namespace in the round trips of SPEC 6:
// (1) write .clock, read the namespace and the owner's index; (2) read the
// owner's last slots and the preferred slot; (3) if none of them is free,
// read the slots in batches of 32, 64, 128, 256, 256, ... until one is; (4)
// one multi that compare-and-sets (or creates) the slot and writes the
// owner's index. A slot lost to a concurrent acquire is read again and the
// search goes on.
func (s *Store) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	if err := checkSlotSegments("namespace", req.Namespace.Name, "owner", req.Owner); err != nil {
		return driver.Lease{}, err
	}
	done, err := s.takeSlotTurn(ctx, req.Namespace.Name)
	if err != nil {
		return driver.Lease{}, err
	}
	defer done()
	q := &acquisition{s: s, req: req, a: attempts{s: s}, passed: map[int]error{}}
	q.now, q.fenceFloor, q.index, err = s.clockIn(ctx, req.Namespace, req.Owner, &q.a)
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
			return r.state().lease(req.Namespace.Name, r.n), nil
		}
	}
	for _, r := range reads {
		if l, ok, err := q.try(ctx, r); ok || err != nil {
			return l, err
		}
	}

	size := firstSlotBatch
	for start := 0; start < limit; start += size {
		if start > 0 {
			size = min(2*size, maxSlotBatch)
		}
		var nums []int
		for n := start; n < min(start+size, limit); n++ {
			if !slices.Contains(first, n) {
				nums = append(nums, n)
			}
		}
		if len(nums) == 0 {
			continue
		}
		reads, err := s.readSlots(ctx, req.Namespace.Name, nums, &q.a)
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
			return r.state().lease(q.req.Namespace.Name, r.n), true, nil
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
	s, ns := q.s, q.req.Namespace.Name
	node := r.node.withRecord(r.record(q.fenceFloor).NewTerm(q.req, q.now))
	data := formatSlot(node)
	var ops []any
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
	slotOps := len(ops)
	idxPath := s.ownerPath(ns, q.req.Owner)
	idxData := formatOwnerIndex(driver.RememberSlot(q.index.slots, r.n))
	if q.index.exists {
		if err := checkVersion(idxPath, q.index.version); err != nil {
			return nil, r, err
		}
		ops = append(ops, &zk.SetDataRequest{Path: idxPath, Data: idxData, Version: q.index.version})
	} else {
		ops = append(ops, &zk.CreateRequest{Path: idxPath, Data: idxData, Acl: s.acl})
	}
	res, err := call(ctx, s, func() ([]zk.MultiResponse, error) { return s.conn.Multi(ops...) })
	if err == nil {
		if len(res) != len(ops) || res[slotOps-1].Stat == nil {
			return nil, r, fmt.Errorf("zookeeper: %s: acquire answered %d results, want %d with a Stat", r.path, len(res), len(ops))
		}
		return newSlotState(r.path, node, res[slotOps-1].Stat), r, nil
	}
	if definite(err) {
		// Nothing was applied. The first failed operation says why: those
		// before it report no error, those after it a rollback.
		failed := -1
		for i, op := range res {
			if op.Error != nil {
				failed = i
				break
			}
		}
		switch {
		case failed >= slotOps && errors.Is(err, zk.ErrNoNode) && !q.index.exists:
			// The owner directory of the namespace is missing.
			if err := s.createParents(ctx, idxPath, &q.a); err != nil {
				return nil, r, err
			}
			return nil, r, nil
		case failed >= slotOps:
			// Another acquire of the same owner key wrote the index.
			q.index, err = s.readOwnerIndex(ctx, idxPath, &q.a)
			return nil, r, err
		case failed == 0 && !r.exists && errors.Is(err, zk.ErrNoNode):
			return nil, r, fmt.Errorf("zookeeper: %s was deleted during an acquire: %w", s.nsPath(ns), driver.ErrNotFound)
		case failed >= 0 && (errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode)):
			// Lost the slot to a concurrent write: read it again.
			again, err := s.readSlot(ctx, ns, r.n, &q.a)
			return nil, again, err
		}
		return nil, r, fmt.Errorf("zookeeper: acquire %s: %w", r.path, err)
	}
	// The multi may or may not have been applied. Only the slot's data can
	// tell: if it holds the term written here (owner, incarnation and
	// fence), the term is this acquire's.
	if err := q.a.retry(ctx, err); err != nil {
		return nil, r, fmt.Errorf("zookeeper: acquire %s: outcome unknown: %w", r.path, err)
	}
	again, err := s.readSlot(ctx, ns, r.n, &q.a)
	if err != nil {
		return nil, r, err
	}
	if again.exists && again.bad == nil && again.record(0).Holds(driver.Lease{Owner: node.owner, Incarnation: node.incarnation, Fence: node.fence}) {
		return again.state(), again, nil
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
	sort.Ints(nums)
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

// leaseState returns the state l carries if it describes l's term on path.
func leaseState(l driver.Lease, path string) *slotState {
	st, ok := l.State.(*slotState)
	if !ok || st == nil || st.path != path || !st.node.record(st.mtime).Holds(l) {
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
// term on the node of creation zxid czxid (any node when czxid is 0).
func (s *Store) currentTerm(ctx context.Context, l driver.Lease, czxid int64, a *attempts) (*slotState, slotRead, error) {
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
	}
	return r.state(), r, nil
}

// rewriteTerm compare-and-sets l's slot from st (the state last seen) to the
// node change makes of it, reading again after a conflict or an unknown
// outcome, as long as the slot holds l's term. settled, if set, may accept
// a node read after an unknown outcome as the write having happened; only
// a node written after the write was sent can be its result (its mzxid is
// above every one seen before), so that a term some earlier call released
// (a second Release, an older copy of the lease) is never taken for ours.
func (s *Store) rewriteTerm(ctx context.Context, l driver.Lease, change func(st *slotState) (slotNode, error),
	settled func(r slotRead) bool) (*slotState, error) {
	path := s.slotPath(l.Namespace, l.Slot)
	a := attempts{s: s}
	st := leaseState(l, path)
	var czxid int64
	if st != nil {
		czxid = st.czxid
	}
	unknown := false
	var sentAbove int64 // with unknown: the zxid seen before the first write whose outcome is unknown
	for {
		if st == nil {
			var r slotRead
			var err error
			st, r, err = s.currentTerm(ctx, l, czxid, &a)
			if err != nil {
				if unknown && settled != nil && errors.Is(err, driver.ErrLeaseLost) && !errors.Is(err, driver.ErrRecreated) &&
					r.stat.Mzxid > sentAbove && settled(r) {
					return nil, nil
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
		stat, err := call(ctx, s, func() (*zk.Stat, error) { return s.conn.Set(path, data, version) })
		switch {
		case err == nil:
			s.seeSlotZxid(stat.Mzxid)
			if stat.Czxid != st.czxid {
				// Recreated to the very version seen: the write landed on
				// another node, and cannot be taken back.
				return nil, fmt.Errorf("zookeeper: %s was deleted and recreated (czxid %#x, was %#x): %w (%w)",
					path, stat.Czxid, st.czxid, driver.ErrLeaseLost, driver.ErrRecreated)
			}
			return newSlotState(path, node, stat), nil
		case errors.Is(err, zk.ErrBadVersion):
			st = nil // written meanwhile: is the term still ours?
		case errors.Is(err, zk.ErrNoNode):
			return nil, fmt.Errorf("zookeeper: %s was deleted: %w (%w)", path, driver.ErrLeaseLost, driver.ErrRecreated)
		default:
			if err := a.retry(ctx, err); err != nil {
				return nil, fmt.Errorf("zookeeper: write %s: outcome unknown: %w", path, err)
			}
			if !unknown {
				sentAbove = seen
			}
			st, unknown = nil, true
		}
	}
}

// Renew extends l's term, even after its expiry if nobody took the slot:
// one compare-and-set on the version the lease carries. The current
// expiry and ceiling (and the lease's own, should the node ever hold less)
// become the term's lower bounds, so neither goes back.
func (s *Store) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	if err := checkSlotSegments("namespace", l.Namespace, "owner", l.Owner); err != nil {
		return l, err
	}
	st, err := s.rewriteTerm(ctx, l, func(st *slotState) (slotNode, error) {
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
func (s *Store) Release(ctx context.Context, l driver.Lease, used int64) error {
	if err := checkSlotSegments("namespace", l.Namespace, "owner", l.Owner); err != nil {
		return err
	}
	_, err := s.rewriteTerm(ctx, l, func(st *slotState) (slotNode, error) {
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

// SeedSlot raises slot n's history for a migration (see driver.SlotSeeder),
// as the memory driver does: a slot never used becomes a released slot with
// the given fence and next floor; an expired term is ended as a takeover
// would end it (its next floor takes in its ceiling); a live term gives
// ErrLocked. Whether a term is live is judged by the mtime of a .clock
// write, as in an acquire.
func (s *Store) SeedSlot(ctx context.Context, ns driver.Namespace, n int, fence, nextFloor int64) error {
	if err := checkSlotSegments("namespace", ns.Name); err != nil {
		return err
	}
	done, err := s.takeSlotTurn(ctx, ns.Name)
	if err != nil {
		return err
	}
	defer done()
	a := attempts{s: s}
	now, fenceFloor, _, err := s.clockIn(ctx, ns, "", &a)
	if err != nil {
		return err
	}
	for {
		r, err := s.readSlot(ctx, ns.Name, n, &a)
		if err != nil {
			return err
		}
		if r.bad != nil {
			return r.bad
		}
		rec, changed, err := r.record(fenceFloor).Seeded(fence, nextFloor, now)
		switch {
		case err != nil:
			return fmt.Errorf("zookeeper: %s: %w", r.path, err)
		case !changed:
			return nil
		}
		data := formatSlot(r.node.withRecord(rec))
		op := func() (*zk.Stat, error) {
			_, err := s.conn.Create(r.path, data, 0, s.acl)
			return nil, err
		}
		if r.exists {
			if err := checkVersion(r.path, r.stat.Version); err != nil {
				return err
			}
			version := r.stat.Version
			op = func() (*zk.Stat, error) { return s.conn.Set(r.path, data, version) }
		}
		_, err = call(ctx, s, op)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNodeExists), errors.Is(err, zk.ErrBadVersion):
			continue // written meanwhile: judge it again
		case errors.Is(err, zk.ErrNoNode) && !r.exists:
			return fmt.Errorf("zookeeper: %s was deleted during a seed: %w", s.nsPath(ns.Name), driver.ErrNotFound)
		case errors.Is(err, zk.ErrNoNode):
			continue
		case definite(err):
			return fmt.Errorf("zookeeper: seed %s: %w", r.path, err)
		}
		// Seeding only raises values, so after an unknown outcome the next
		// pass either finds them raised or raises them.
		if err := a.retry(ctx, err); err != nil {
			return fmt.Errorf("zookeeper: seed %s: outcome unknown: %w", r.path, err)
		}
	}
}

// Namespaces lists every namespace with its settings, sorted by name.
func (s *Store) Namespaces(ctx context.Context) ([]driver.Namespace, error) {
	a := attempts{s: s}
	base := s.root + "/slot"
	names, err := s.children(ctx, base, &a)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := []driver.Namespace{}
	for start := 0; start < len(names); start += slotListChunk {
		chunk := names[start:min(start+slotListChunk, len(names))]
		paths := make([]string, len(chunk))
		for i, name := range chunk {
			paths[i] = base + "/" + name
		}
		rs, err := s.getNodes(ctx, paths, &a)
		if err != nil {
			return nil, err
		}
		for i, r := range rs {
			if errors.Is(r.err, zk.ErrNoNode) {
				continue // deleted since the listing
			}
			limit, tol, err := parseNamespace(r.data)
			if err != nil {
				return nil, corruptData(paths[i], r.data, err)
			}
			out = append(out, driver.Namespace{Name: chunk[i], Limit: limit, Tolerance: time.Duration(tol) * time.Millisecond})
		}
	}
	return out, nil
}

// Slots lists every used slot of namespace ns, by slot number. A child of
// the namespace that is not a slot number below the limit, or a slot whose
// data does not parse, fails the listing with ErrCorrupt naming its path:
// a tool must not silently miss a slot.
func (s *Store) Slots(ctx context.Context, ns string) ([]driver.SlotInfo, error) {
	if err := checkSlotSegments("namespace", ns); err != nil {
		return nil, err
	}
	a := attempts{s: s}
	path := s.nsPath(ns)
	var rs []tripReply
	for {
		var err error
		rs, err = inOneTrip(ctx, s, s.tripChildren(path), s.tripGet(path))
		if err != nil {
			return nil, err
		}
		if err := firstTransient(rs); err != nil {
			if err := a.retry(ctx, err); err != nil {
				return nil, fmt.Errorf("zookeeper: list %s: %w", path, err)
			}
			continue
		}
		break
	}
	for _, r := range rs {
		switch {
		case errors.Is(r.err, zk.ErrNoNode):
			return nil, fmt.Errorf("zookeeper: no namespace %s: %w", path, driver.ErrNotFound)
		case r.err != nil:
			return nil, fmt.Errorf("zookeeper: list %s: %w", path, r.err)
		}
	}
	limit, _, err := parseNamespace(rs[1].data)
	if err != nil {
		return nil, corruptData(path, rs[1].data, err)
	}
	var nums []int
	for _, name := range rs[0].children {
		if name == clockName {
			continue
		}
		n, err := strconv.Atoi(name)
		if err != nil || n < 0 || n >= limit || strconv.Itoa(n) != name {
			return nil, fmt.Errorf("zookeeper: %s/%s is not a slot of a namespace of %d slots: %w", path, name, limit, driver.ErrCorrupt)
		}
		nums = append(nums, n)
	}
	sort.Ints(nums)
	out := []driver.SlotInfo{}
	for start := 0; start < len(nums); start += slotListChunk {
		reads, err := s.readSlots(ctx, ns, nums[start:min(start+slotListChunk, len(nums))], &a)
		if err != nil {
			return nil, err
		}
		for _, r := range reads {
			switch {
			case r.bad != nil:
				return nil, r.bad
			case !r.exists:
				continue // deleted since the listing
			}
			out = append(out, r.record(0).Info(r.n))
		}
	}
	return out, nil
}

// readAll runs the read op (tripGet or tripChildren; verb names it in
// errors) on each of paths in one round trip, retrying the transient
// failures in one trip each time. A missing node is reported in its reply
// (ErrNoNode), not as an error.
func (s *Store) readAll(ctx context.Context, verb string, op func(path string) func() tripReply, paths []string, a *attempts) ([]tripReply, error) {
	out := make([]tripReply, len(paths))
	todo := make([]int, len(paths))
	for i := range paths {
		todo[i] = i
	}
	for len(todo) > 0 {
		ops := make([]func() tripReply, len(todo))
		for k, i := range todo {
			ops[k] = op(paths[i])
		}
		rs, err := inOneTrip(ctx, s, ops...)
		if err != nil {
			return nil, err
		}
		var again []int
		var firstTransient error
		for k, i := range todo {
			r := rs[k]
			switch {
			case r.err == nil, errors.Is(r.err, zk.ErrNoNode):
				out[i] = r
			case retryable(r.err):
				again, firstTransient = append(again, i), r.err
			default:
				return nil, fmt.Errorf("zookeeper: %s %s: %w", verb, paths[i], r.err)
			}
		}
		if len(again) > 0 {
			if err := a.retry(ctx, firstTransient); err != nil {
				return nil, fmt.Errorf("zookeeper: %s %s: %w", verb, paths[again[0]], err)
			}
		}
		todo = again
	}
	return out, nil
}

// getNodes reads the data of paths in one round trip (see readAll).
func (s *Store) getNodes(ctx context.Context, paths []string, a *attempts) ([]tripReply, error) {
	return s.readAll(ctx, "read", s.tripGet, paths, a)
}
