package etcd

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
)

// Acquire reads the namespace and the owner index (with the preferred slot
// and the search's first few, prefetch), then the owner's slots, then,
// only if none is free, the others as search says; then it writes the new
// term and the index in one transaction that compares every key it read.
// A lost race starts over, unless only the slot was taken (or the missing
// namespace created as this pass would have): it goes on from there.
func (s *slotStore) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	ctx = attempts(ctx) // failover: a cut term write is found by owner (attempts.go)
	name := req.Namespace.Name
	nk, ok := s.nsKey(name), s.ownerKey(name, req.Owner)
	for attempt := 1; ; attempt++ {
		l, done, err := s.acquireOnce(ctx, req, nk, ok)
		if done || err != nil {
			if err != nil && retryable(err) && ctx.Err() == nil {
				if err := s.backoff(ctx, attempt, err); err != nil {
					return driver.Lease{}, err
				}
				continue
			}
			return l, err
		}
	}
}

// acquireOnce is one pass of Acquire: done is false when another store
// wrote a key it read (start over).
func (s *slotStore) acquireOnce(ctx context.Context, req driver.AcquireRequest, nk, ok string) (l driver.Lease, done bool, err error) {
	a, err := s.startAcquire(ctx, req, nk, ok)
	if err != nil {
		return driver.Lease{}, false, err
	}
	first := driver.FirstSlots(a.index, req.Preferred, req.Namespace.Limit)
	if purged, err := a.read(ctx, a.unread(first)); purged || err != nil {
		return driver.Lease{}, false, err
	}
	a.now = s.now()
	if l, own, err := a.own(first); own || err != nil {
		return l, own, err
	}
	if l, taken, lost, err := a.tryEach(ctx, slices.Values(first)); taken || lost || err != nil {
		return l, taken, err
	}
	if l, taken, lost, err := a.search(ctx); taken || lost || err != nil {
		return l, taken, err
	}
	if a.createNS && a.holed == nil {
		// A missing namespace is created even when no slot can be taken
		// (every fence at its end, after a purge): a later Acquire with
		// other settings is then a mismatch, as the contract says.
		if created, err := a.createNamespace(ctx); !created || err != nil {
			return driver.Lease{}, false, err // created meanwhile: start over
		}
	}
	return driver.Lease{}, true, a.exhausted()
}

// acquisition is what one pass of Acquire read and judged.
type acquisition struct {
	s        *slotStore
	req      driver.AcquireRequest
	nk       string
	floor    driver.SlotRecord // what a slot never stored stands for: the purges' floors (parseFloor)
	tally    tally             // the namespace's slot keys, as the last read of them found (slot_tally.go)
	hole     error             // tally.hole: a missing slot is then not taken
	purged   int64             // the mod revision of the key that holds it (0: none): a purge changes it
	rev      int64             // the revision of the reads a slot never stored stands for
	createNS bool              // the namespace is missing: this pass creates it
	nsMod    int64             // the namespace key's mod revision (0: missing), compared by the write: a seal changes it
	index    []int             // the owner's slots, most recent first
	ownerMod int64             // the owner index's mod revision (0: none)
	slots    map[int]slotState
	now      int64
	skipped  []string // why slots were passed over
	holed    error    // and missing ones for a hole in the tally (its error)
}

// startAcquire reads the namespace (checking its settings), the owner
// index and the purge's fence floor, in one transaction, with the slots
// known to be looked at before the index is read: the preferred one and
// the search's first batch (prefetch). A fresh acquire in a crowded
// namespace then takes a slot in two round trips: this read and its write.
func (s *slotStore) startAcquire(ctx context.Context, req driver.AcquireRequest, nk, ok string) (*acquisition, error) {
	name := req.Namespace.Name
	slots := s.key("slot", name) + "/"
	pre := prefetch(req)
	ops := []clientv3.Op{clientv3.OpGet(nk), clientv3.OpGet(ok), clientv3.OpGet(s.key("purged")),
		clientv3.OpGet(slots, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1)),
		clientv3.OpGet(s.tallyKey(name))}
	for _, n := range pre {
		ops = append(ops, clientv3.OpGet(s.slotKey(name, n)))
	}
	resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
	if err = s.check(ctx, err); err != nil {
		return nil, err
	}
	a := &acquisition{s: s, req: req, nk: nk, slots: map[int]slotState{}, rev: resp.Header.Revision,
		purged: modOf(resp.Responses[2].GetResponseRange().Kvs)}
	if a.floor, err = s.parseFloor(resp.Responses[2].GetResponseRange().Kvs); err != nil {
		return nil, err
	}
	if err := a.learnTally(resp.Responses[3].GetResponseRange(), resp.Responses[4].GetResponseRange()); err != nil {
		return nil, err
	}
	nsKVs := resp.Responses[0].GetResponseRange().Kvs
	a.createNS = len(nsKVs) == 0
	if kvs := resp.Responses[3].GetResponseRange().Kvs; a.createNS && len(kvs) > 0 {
		// Slot keys are written with their namespace key and a purge
		// deletes both: a namespace key gone beside them was deleted by
		// hand, and with it maybe a seal. Creating it afresh would
		// unseal the namespace silently.
		return nil, fmt.Errorf("namespace key %s is missing but slot key %s exists (deleted by hand?): %w",
			nk, kvs[0].Key, driver.ErrCorrupt)
	}
	if !a.createNS {
		have, err := parseNamespace(req.Namespace.Name, nk, nsKVs[0].Value)
		if err != nil {
			return nil, err
		}
		if have.Sealed {
			return nil, sealedErr(req.Namespace.Name)
		}
		a.nsMod = nsKVs[0].ModRevision
		if have.Limit != req.Namespace.Limit || have.Tolerance != req.Namespace.Tolerance {
			return nil, fmt.Errorf("namespace has limit %d and tolerance %v, not limit %d and tolerance %v: %w",
				have.Limit, have.Tolerance, req.Namespace.Limit, req.Namespace.Tolerance, driver.ErrConfigMismatch)
		}
	}
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
		if a.index, err = parseIndex(ok, kvs[0].Value); err != nil {
			return nil, err
		}
		a.ownerMod = kvs[0].ModRevision
	}
	if !a.createNS { // a missing namespace has no slots: each is a.missing
		for i, n := range pre {
			if kvs := resp.Responses[5+i].GetResponseRange().Kvs; len(kvs) == 1 {
				a.slots[n] = withRev(slotFrom(s.slotKey(name, n), kvs[0], a.floor), a.rev)
			} else {
				a.slots[n] = a.missing(a.rev)
			}
		}
	}
	return a, nil
}

// prefetch is what startAcquire reads of the slots: the preferred slot
// and the search's first batch (searchBatches).
func prefetch(req driver.AcquireRequest) []int {
	limit := req.Namespace.Limit
	pre := driver.FirstSlots(nil, req.Preferred, limit)
	i := 0
	for n := range driver.SearchOrder(driver.SearchStart(req.Owner, req.Incarnation, limit), limit) {
		if i++; i > searchBatches[0] {
			break
		}
		if !slices.Contains(pre, n) {
			pre = append(pre, n)
		}
	}
	return pre
}

// unread are the slots of ns this pass has not read yet.
func (a *acquisition) unread(ns []int) []int {
	var out []int
	for _, n := range ns {
		if _, ok := a.slots[n]; !ok {
			out = append(out, n)
		}
	}
	return out
}

// slot returns slot n as read, or as a slot never stored.
func (a *acquisition) slot(n int) slotState {
	if st, ok := a.slots[n]; ok {
		return st
	}
	return a.missing(a.rev)
}

// read reads the slots ns in one transaction (a missing namespace has
// none), with the purged fence floor's key: purged is true when a purge
// came since the first read (start over), so a slot found missing is
// judged by the floor of its own time.
func (a *acquisition) read(ctx context.Context, ns []int) (purged bool, err error) {
	if a.createNS || len(ns) == 0 {
		return false, nil
	}
	name := a.req.Namespace.Name
	var ops []clientv3.Op
	for _, n := range ns {
		ops = append(ops, clientv3.OpGet(a.s.slotKey(name, n)))
	}
	ops = append(ops, clientv3.OpGet(a.s.key("purged"), clientv3.WithKeysOnly()))
	ops = append(ops, a.s.tallyOps(name)...)
	resp, err := a.s.cli.Txn(ctx).Then(ops...).Commit()
	if err = a.s.check(ctx, err); err != nil {
		return false, err
	}
	if modOf(resp.Responses[len(ns)].GetResponseRange().Kvs) != a.purged {
		return true, nil
	}
	if err := a.learnTally(resp.Responses[len(ns)+1].GetResponseRange(), resp.Responses[len(ns)+2].GetResponseRange()); err != nil {
		return false, err
	}
	for i, n := range ns {
		if kvs := resp.Responses[i].GetResponseRange().Kvs; len(kvs) == 1 {
			a.slots[n] = withRev(slotFrom(a.s.slotKey(name, n), kvs[0], a.floor), resp.Header.Revision)
		} else {
			a.slots[n] = a.missing(resp.Header.Revision)
		}
	}
	return false, nil
}

// readAll reads every slot of the namespace's limit, as read does.
func (a *acquisition) readAll(ctx context.Context) (purged bool, err error) {
	if a.createNS {
		return false, nil
	}
	p := a.s.key("slot", a.req.Namespace.Name) + "/"
	resp, err := a.s.cli.Txn(ctx).Then(clientv3.OpGet(p, clientv3.WithPrefix()), clientv3.OpGet(a.s.key("purged"), clientv3.WithKeysOnly()),
		clientv3.OpGet(a.s.tallyKey(a.req.Namespace.Name))).Commit()
	if err = a.s.check(ctx, err); err != nil {
		return false, err
	}
	if modOf(resp.Responses[1].GetResponseRange().Kvs) != a.purged {
		return true, nil
	}
	if err := a.learnTally(resp.Responses[0].GetResponseRange(), resp.Responses[2].GetResponseRange()); err != nil {
		return false, err
	}
	a.rev = resp.Header.Revision
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		n, err := strconv.Atoi(strings.TrimPrefix(string(kv.Key), p))
		if err != nil || n < 0 || n >= a.req.Namespace.Limit {
			continue // not a slot of this limit: never chosen
		}
		a.slots[n] = withRev(slotFrom(string(kv.Key), kv, a.floor), a.rev)
	}
	return false, nil
}

// own returns the owner's running term among the slots ns.
func (a *acquisition) own(ns []int) (driver.Lease, bool, error) {
	for _, n := range ns {
		if st := a.slot(n); st.err == nil {
			if err := a.s.guardFence(a.s.slotKey(a.req.Namespace.Name, n), st); err != nil {
				return driver.Lease{}, false, err
			}
			if v, _ := st.r.Judge(a.req, a.now); v == driver.SlotOwn {
				return st.r.Lease(a.req.Namespace.Name, n), true, nil
			}
		}
	}
	return driver.Lease{}, false, nil
}

// tryEach tries the slots ns in order until one is taken, the pass is
// lost or fails.
func (a *acquisition) tryEach(ctx context.Context, ns iter.Seq[int]) (l driver.Lease, taken, lost bool, err error) {
	for n := range ns {
		if l, taken, lost, err = a.try(ctx, n); taken || lost || err != nil {
			return l, taken, lost, err
		}
	}
	return driver.Lease{}, false, false, nil
}

// searchBatches are the sizes of the first reads of an acquire's search
// from its own point, before it reads the whole namespace: a fleet's
// acquirers spread over it, so a free slot is most likely in the first few.
var searchBatches = []int{4, 8, 16, 32, 64}

// search tries every slot in driver.SearchOrder from the acquire's own
// point (driver.SearchStart) until one is taken, the pass is lost or
// fails, so that a fleet acquiring at once spreads over the namespace
// instead of all racing for one slot. It first reads a few slots from its
// point at a time (searchBatches), and the whole namespace only if none of
// them is free.
func (a *acquisition) search(ctx context.Context) (l driver.Lease, taken, lost bool, err error) {
	limit := a.req.Namespace.Limit
	a.skipped, a.holed = a.skipped[:0], nil
	order := slices.Collect(driver.SearchOrder(driver.SearchStart(a.req.Owner, a.req.Incarnation, limit), limit))
	i := 0
	for _, size := range searchBatches {
		if i >= limit {
			break
		}
		batch := order[i:min(i+size, limit)]
		if purged, err := a.read(ctx, a.unread(batch)); purged || err != nil {
			return driver.Lease{}, false, purged, err
		}
		for _, n := range batch {
			if l, taken, lost, err = a.try(ctx, n); taken || lost || err != nil {
				return l, taken, lost, err
			}
		}
		i += len(batch)
	}
	if i < limit {
		if purged, err := a.readAll(ctx); purged || err != nil {
			return driver.Lease{}, false, purged, err
		}
	}
	for _, n := range order[i:] {
		if l, taken, lost, err = a.try(ctx, n); taken || lost || err != nil {
			return l, taken, lost, err
		}
	}
	return driver.Lease{}, false, false, nil
}

// try judges slot n: a lease when it is ours or was taken, lost when
// another store wrote a key read meanwhile (start over), else pass on.
func (a *acquisition) try(ctx context.Context, n int) (l driver.Lease, taken, lost bool, err error) {
	name := a.req.Namespace.Name
	for {
		st := a.slot(n)
		if st.err != nil {
			if st.hole {
				a.holed = st.err // said once, for every missing slot
				return driver.Lease{}, false, false, nil
			}
			a.skipped = append(a.skipped, st.err.Error())
			return driver.Lease{}, false, false, nil
		}
		if err := a.s.guardFence(a.s.slotKey(name, n), st); err != nil {
			return driver.Lease{}, false, false, err
		}
		v, why := st.r.Judge(a.req, a.now)
		switch v {
		case driver.SlotOwn:
			return st.r.Lease(name, n), true, false, nil
		case driver.SlotFree:
			l, ok, fresh, err := a.writeTerm(ctx, n, st)
			if ok || err != nil {
				return l, ok, false, err
			}
			if fresh == nil {
				return driver.Lease{}, false, true, nil // the index or namespace changed: start over
			}
			// Another store took this slot first: judge it again as it
			// is now, and go on from it (a crowd of acquirers each moves
			// on, rather than all starting over).
			a.slots[n] = *fresh
			continue
		}
		if why != nil {
			a.skipped = append(a.skipped, fmt.Sprintf("slot %d: %v", n, why))
		}
		return driver.Lease{}, false, false, nil
	}
}

// exhausted is the error of a pass that found no slot to take, naming the
// slots passed over as unusable (an operator repairs those, where held
// slots only wait for their terms); ErrCorrupt too when missing slots were
// passed over for a hole in the tally.
func (a *acquisition) exhausted() error {
	what := fmt.Sprintf("all %d slots are held", a.req.Namespace.Limit)
	if len(a.skipped) > 0 {
		what = fmt.Sprintf("no free slot among %d; passed over %d unusable (%s)",
			a.req.Namespace.Limit, len(a.skipped), strings.Join(a.skipped, "; "))
	}
	if a.holed != nil {
		return fmt.Errorf("%s, or missing: %w: %w", what, driver.ErrExhausted, a.holed)
	}
	return fmt.Errorf("%s: %w", what, driver.ErrExhausted)
}
