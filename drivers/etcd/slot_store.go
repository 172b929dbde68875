package etcd

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
)

// Keys of the slot capability, under the prefix:
//
//	ns/{ns}            limit=N and tolerance=MS lines
//	slot/{ns}/{n}      the slot's driver.SlotRecord, MarshalBinary
//	owner/{ns}/{owner} the owner index: slot numbers, most recent first
//
// Time is the clock of the host that writes (s.now): etcd stamps no time
// on a write (docs/design.md, etcd).

func (s *etcdStore) nsKey(ns string) string           { return s.key("ns", ns) }
func (s *etcdStore) slotKey(ns string, n int) string  { return s.key("slot", ns, strconv.Itoa(n)) }
func (s *etcdStore) ownerKey(ns, owner string) string { return s.key("owner", ns, owner) }

func formatNamespace(ns driver.Namespace) string {
	return fmt.Sprintf("limit=%d\ntolerance=%d", ns.Limit, ns.Tolerance.Milliseconds())
}

func parseNamespace(name, k string, v []byte) (driver.Namespace, error) {
	var limit, tol int64
	if _, err := fmt.Sscanf(string(v), "limit=%d\ntolerance=%d", &limit, &tol); err != nil || limit < 1 || tol < 0 ||
		string(v) != fmt.Sprintf("limit=%d\ntolerance=%d", limit, tol) {
		return driver.Namespace{}, fmt.Errorf("namespace key %s holds %q: %w", k, v, driver.ErrCorrupt)
	}
	return driver.Namespace{Name: name, Limit: int(limit), Tolerance: time.Duration(tol) * time.Millisecond}, nil
}

func parseIndex(k string, v []byte) ([]int, error) {
	var out []int
	for _, f := range strings.Split(string(v), ",") {
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("owner index %s holds %q: %w", k, v, driver.ErrCorrupt)
		}
		out = append(out, n)
	}
	return out, nil
}

func formatIndex(index []int) string {
	var b strings.Builder
	for i, n := range index {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}

// slotState is a slot as read: its record, the record's decoding error,
// and the key's mod revision (0: never stored).
type slotState struct {
	r   driver.SlotRecord
	err error
	mod int64
}

// slotFrom decodes a slot key; a slot never stored (kv nil) starts above
// floor, the highest slot fence a purge deleted.
func slotFrom(k string, kv *mvccpb.KeyValue, floor int64) slotState {
	if kv == nil {
		return slotState{r: driver.SlotRecord{Fence: floor}}
	}
	var r driver.SlotRecord
	if err := r.UnmarshalBinary(kv.Value); err != nil {
		return slotState{err: fmt.Errorf("slot key %s: %v: %w", k, err, driver.ErrCorrupt), mod: kv.ModRevision}
	}
	return slotState{r: r, mod: kv.ModRevision}
}

// Acquire reads the namespace and the owner index, then the owner's slots
// and the preferred one, then, only if none is free, every slot; then it
// writes the new term and the index in one transaction that compares every
// key it read. A lost race starts over.
func (s *etcdStore) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
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
func (s *etcdStore) acquireOnce(ctx context.Context, req driver.AcquireRequest, nk, ok string) (l driver.Lease, done bool, err error) {
	a, err := s.startAcquire(ctx, req, nk, ok)
	if err != nil {
		return driver.Lease{}, false, err
	}
	first := driver.FirstSlots(a.index, req.Preferred, req.Namespace.Limit)
	if err := a.read(ctx, first); err != nil {
		return driver.Lease{}, false, err
	}
	a.now = s.now()
	if l, own := a.own(first); own {
		return l, true, nil
	}
	if l, taken, lost, err := a.tryEach(ctx, slices.Values(first)); taken || lost || err != nil {
		return l, taken, err
	}
	if err := a.readAll(ctx); err != nil {
		return driver.Lease{}, false, err
	}
	a.skipped = a.skipped[:0]
	if l, taken, lost, err := a.tryEach(ctx, upTo(req.Namespace.Limit)); taken || lost || err != nil {
		return l, taken, err
	}
	if a.createNS {
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
	s        *etcdStore
	req      driver.AcquireRequest
	nk       string
	floor    int64 // the highest slot fence a purge deleted
	createNS bool  // the namespace is missing: this pass creates it
	index    []int // the owner's slots, most recent first
	ownerMod int64 // the owner index's mod revision (0: none)
	slots    map[int]slotState
	now      int64
	skipped  []string // why slots were passed over
}

// startAcquire reads the namespace (checking its settings), the owner
// index and the purge's fence floor, in one transaction.
func (s *etcdStore) startAcquire(ctx context.Context, req driver.AcquireRequest, nk, ok string) (*acquisition, error) {
	resp, err := s.cli.Txn(ctx).Then(clientv3.OpGet(nk), clientv3.OpGet(ok), clientv3.OpGet(s.key("purged"))).Commit()
	if err = s.check(ctx, err); err != nil {
		return nil, err
	}
	a := &acquisition{s: s, req: req, nk: nk, slots: map[int]slotState{}}
	if a.floor, err = s.parseFloor(resp.Responses[2].GetResponseRange().Kvs); err != nil {
		return nil, err
	}
	nsKVs := resp.Responses[0].GetResponseRange().Kvs
	a.createNS = len(nsKVs) == 0
	if !a.createNS {
		have, err := parseNamespace(req.Namespace.Name, nk, nsKVs[0].Value)
		if err != nil {
			return nil, err
		}
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
	return a, nil
}

// slot returns slot n as read, or as a slot never stored.
func (a *acquisition) slot(n int) slotState {
	if st, ok := a.slots[n]; ok {
		return st
	}
	return slotFrom("", nil, a.floor)
}

// read reads the slots ns in one transaction (a missing namespace has
// none).
func (a *acquisition) read(ctx context.Context, ns []int) error {
	if a.createNS {
		return nil
	}
	name := a.req.Namespace.Name
	var ops []clientv3.Op
	for _, n := range ns {
		ops = append(ops, clientv3.OpGet(a.s.slotKey(name, n)))
	}
	resp, err := a.s.cli.Txn(ctx).Then(ops...).Commit()
	if err = a.s.check(ctx, err); err != nil {
		return err
	}
	for i, n := range ns {
		var kv *mvccpb.KeyValue
		if kvs := resp.Responses[i].GetResponseRange().Kvs; len(kvs) == 1 {
			kv = kvs[0]
		}
		a.slots[n] = slotFrom(a.s.slotKey(name, n), kv, a.floor)
	}
	return nil
}

// readAll reads every slot of the namespace's limit.
func (a *acquisition) readAll(ctx context.Context) error {
	if a.createNS {
		return nil
	}
	p := a.s.key("slot", a.req.Namespace.Name) + "/"
	resp, err := a.s.cli.Get(ctx, p, clientv3.WithPrefix())
	if err = a.s.check(ctx, err); err != nil {
		return err
	}
	for _, kv := range resp.Kvs {
		n, err := strconv.Atoi(strings.TrimPrefix(string(kv.Key), p))
		if err != nil || n < 0 || n >= a.req.Namespace.Limit {
			continue // not a slot of this limit: never chosen
		}
		a.slots[n] = slotFrom(string(kv.Key), kv, a.floor)
	}
	return nil
}

// own returns the owner's running term among the slots ns.
func (a *acquisition) own(ns []int) (driver.Lease, bool) {
	for _, n := range ns {
		if st := a.slot(n); st.err == nil {
			if v, _ := st.r.Judge(a.req, a.now); v == driver.SlotOwn {
				return st.r.Lease(a.req.Namespace.Name, n), true
			}
		}
	}
	return driver.Lease{}, false
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

// upTo yields 0, 1, ..., n-1.
func upTo(n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
	}
}

// try judges slot n: a lease when it is ours or was taken, lost when
// another store wrote a key read meanwhile (start over), else pass on.
func (a *acquisition) try(ctx context.Context, n int) (l driver.Lease, taken, lost bool, err error) {
	name := a.req.Namespace.Name
	for {
		st := a.slot(n)
		if st.err != nil {
			a.skipped = append(a.skipped, st.err.Error())
			return driver.Lease{}, false, false, nil
		}
		v, why := st.r.Judge(a.req, a.now)
		switch v {
		case driver.SlotOwn:
			return st.r.Lease(name, n), true, false, nil
		case driver.SlotFree:
			l, ok, fresh, err := a.s.writeTerm(ctx, a.req, n, st, a.index, a.ownerMod, a.createNS, a.now)
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

// createNamespace writes the missing namespace; created is false when
// another store created it meanwhile.
func (a *acquisition) createNamespace(ctx context.Context) (created bool, err error) {
	tr, err := a.s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(a.nk), "=", 0)).
		Then(clientv3.OpPut(a.nk, formatNamespace(a.req.Namespace))).Commit()
	if err = a.s.check(ctx, err); err != nil {
		return false, err
	}
	return tr.Succeeded, nil
}

// exhausted is the error of a pass that found no slot to take.
func (a *acquisition) exhausted() error {
	why := ""
	if len(a.skipped) > 0 {
		why = " (" + strings.Join(a.skipped, "; ") + ")"
	}
	return fmt.Errorf("all %d slots are held%s: %w", a.req.Namespace.Limit, why, driver.ErrExhausted)
}

// writeTerm writes slot n's new term and the owner index, comparing both
// (and the namespace, when this acquire creates it) with what was read.
// When another store wrote first, fresh is the slot as it is now if only
// the slot changed, nil if the index or the namespace did.
func (s *etcdStore) writeTerm(ctx context.Context, req driver.AcquireRequest, n int, st slotState,
	index []int, ownerMod int64, createNS bool, now int64) (l driver.Lease, ok bool, fresh *slotState, err error) {
	name := req.Namespace.Name
	r := st.r.NewTerm(req, now)
	data, err := r.MarshalBinary()
	if err != nil {
		return driver.Lease{}, false, nil, err
	}
	sk, ok2, nk := s.slotKey(name, n), s.ownerKey(name, req.Owner), s.nsKey(name)
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(sk), "=", st.mod),
		clientv3.Compare(clientv3.ModRevision(ok2), "=", ownerMod),
	}
	ops := []clientv3.Op{
		clientv3.OpPut(sk, string(data)),
		clientv3.OpPut(ok2, formatIndex(driver.RememberSlot(index, n))),
	}
	if createNS {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(nk), "=", 0))
		ops = append(ops, clientv3.OpPut(nk, formatNamespace(req.Namespace)))
	}
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).
		Else(clientv3.OpGet(sk), clientv3.OpGet(ok2, clientv3.WithKeysOnly()), clientv3.OpGet(nk, clientv3.WithKeysOnly())).Commit()
	if err = s.check(ctx, err); err != nil {
		// Unknown outcome: a retried acquire finds the term by owner and
		// incarnation (SlotOwn) if it was written.
		return driver.Lease{}, false, nil, err
	}
	if resp.Succeeded {
		l = r.Lease(name, n)
		l.State = resp.Header.Revision
		return l, true, nil, nil
	}
	var ownerNow int64
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
		ownerNow = kvs[0].ModRevision
	}
	nsExists := len(resp.Responses[2].GetResponseRange().Kvs) == 1
	if ownerNow != ownerMod || (createNS && nsExists) {
		return driver.Lease{}, false, nil, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return driver.Lease{}, false, nil, nil // deleted meanwhile: start over
	}
	now2 := slotFrom(sk, kvs[0], 0)
	return driver.Lease{}, false, &now2, nil
}

// rewrite applies change to l's slot and compare-and-sets the result on the
// mod revision it read; a conflict reads again.
func (s *etcdStore) rewrite(ctx context.Context, l driver.Lease, change func(r driver.SlotRecord, now int64) (driver.SlotRecord, error)) (driver.SlotRecord, int64, error) {
	k := s.slotKey(l.Namespace, l.Slot)
	for attempt := 1; ; attempt++ {
		resp, err := s.cli.Get(ctx, k)
		if err = s.check(ctx, err); err == nil {
			if len(resp.Kvs) == 0 {
				return driver.SlotRecord{}, 0, fmt.Errorf("slot key %s is missing: %w", k, driver.ErrLeaseLost)
			}
			st := slotFrom(k, resp.Kvs[0], 0)
			if st.err != nil {
				return driver.SlotRecord{}, 0, st.err
			}
			r, cerr := change(st.r, s.now())
			if cerr != nil {
				return r, 0, cerr
			}
			data, merr := r.MarshalBinary()
			if merr != nil {
				return r, 0, merr
			}
			var tr *clientv3.TxnResponse
			tr, err = s.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", st.mod)).
				Then(clientv3.OpPut(k, string(data))).Commit()
			if err = s.check(ctx, err); err == nil {
				if tr.Succeeded {
					return r, tr.Header.Revision, nil
				}
				continue
			}
		}
		if !retryable(err) {
			return driver.SlotRecord{}, 0, err
		}
		if err := s.backoff(ctx, attempt, err); err != nil {
			return driver.SlotRecord{}, 0, err
		}
	}
}

// Renew continues l's term.
func (s *etcdStore) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	r, mod, err := s.rewrite(ctx, l, func(r driver.SlotRecord, now int64) (driver.SlotRecord, error) { return r.Renewed(l, now) })
	if err != nil {
		return l, err
	}
	nl := r.Lease(l.Namespace, l.Slot)
	nl.State = mod
	return nl, nil
}

// Release ends l's term; used < 0 means unknown.
func (s *etcdStore) Release(ctx context.Context, l driver.Lease, used int64) error {
	_, _, err := s.rewrite(ctx, l, func(r driver.SlotRecord, now int64) (driver.SlotRecord, error) { return r.Released(l, used, now) })
	return err
}

// Namespaces lists every namespace, sorted by name.
func (s *etcdStore) Namespaces(ctx context.Context) ([]driver.Namespace, error) {
	p := s.key("ns") + "/"
	resp, err := s.cli.Get(ctx, p, clientv3.WithPrefix())
	if err = s.check(ctx, err); err != nil {
		return nil, err
	}
	out := make([]driver.Namespace, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		ns, err := parseNamespace(strings.TrimPrefix(string(kv.Key), p), string(kv.Key), kv.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, ns)
	}
	slices.SortFunc(out, func(a, b driver.Namespace) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// Slots lists the used slots of a namespace by slot number.
func (s *etcdStore) Slots(ctx context.Context, name string) ([]driver.SlotInfo, error) {
	p := s.key("slot", name) + "/"
	resp, err := s.cli.Txn(ctx).Then(clientv3.OpGet(s.nsKey(name)), clientv3.OpGet(p, clientv3.WithPrefix())).Commit()
	if err = s.check(ctx, err); err != nil {
		return nil, err
	}
	if len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
		return nil, fmt.Errorf("no namespace %q: %w", name, driver.ErrNotFound)
	}
	kvs := resp.Responses[1].GetResponseRange().Kvs
	out := make([]driver.SlotInfo, 0, len(kvs))
	for _, kv := range kvs {
		n, err := strconv.Atoi(strings.TrimPrefix(string(kv.Key), p))
		if err != nil {
			return nil, fmt.Errorf("slot key %s: %w", kv.Key, driver.ErrCorrupt)
		}
		st := slotFrom(string(kv.Key), kv, 0)
		if st.err != nil {
			return nil, st.err
		}
		out = append(out, st.r.Info(n))
	}
	slices.SortFunc(out, func(a, b driver.SlotInfo) int { return cmp.Compare(a.Slot, b.Slot) })
	return out, nil
}

// SeedSlot raises slot n's history for a migration (driver.SlotSeeder),
// creating the namespace if it is missing, in one transaction comparing
// what it read.
func (s *etcdStore) SeedSlot(ctx context.Context, want driver.Namespace, n int, fence, nextFloor int64) error {
	nk, sk := s.nsKey(want.Name), s.slotKey(want.Name, n)
	for attempt := 1; ; attempt++ {
		done, err := s.seedOnce(ctx, want, nk, sk, n, fence, nextFloor)
		if done {
			return err
		}
		if err != nil {
			if !retryable(err) {
				return err
			}
			if err := s.backoff(ctx, attempt, err); err != nil {
				return err
			}
		}
	}
}

func (s *etcdStore) seedOnce(ctx context.Context, want driver.Namespace, nk, sk string, n int, fence, nextFloor int64) (bool, error) {
	resp, err := s.cli.Txn(ctx).Then(clientv3.OpGet(nk), clientv3.OpGet(sk), clientv3.OpGet(s.key("purged"))).Commit()
	if err = s.check(ctx, err); err != nil {
		return false, err
	}
	floor, err := s.parseFloor(resp.Responses[2].GetResponseRange().Kvs)
	if err != nil {
		return true, err
	}
	cmps := []clientv3.Cmp{}
	var ops []clientv3.Op
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 0 {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(nk), "=", 0))
		ops = append(ops, clientv3.OpPut(nk, formatNamespace(want)))
	} else {
		have, err := parseNamespace(want.Name, nk, kvs[0].Value)
		if err != nil {
			return true, err
		}
		if have.Limit != want.Limit || have.Tolerance != want.Tolerance {
			return true, fmt.Errorf("namespace has limit %d and tolerance %v, not limit %d and tolerance %v: %w",
				have.Limit, have.Tolerance, want.Limit, want.Tolerance, driver.ErrConfigMismatch)
		}
	}
	var kv *mvccpb.KeyValue
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
		kv = kvs[0]
	}
	st := slotFrom(sk, kv, floor)
	if st.err != nil {
		return true, st.err
	}
	r, changed, err := st.r.Seeded(fence, nextFloor, s.now())
	if err != nil {
		return true, fmt.Errorf("slot %d: %w", n, err)
	}
	if changed {
		data, err := r.MarshalBinary()
		if err != nil {
			return true, err
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(sk), "=", st.mod))
		ops = append(ops, clientv3.OpPut(sk, string(data)))
	}
	if len(ops) == 0 {
		return true, nil
	}
	tr, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err = s.check(ctx, err); err != nil {
		return false, err
	}
	return tr.Succeeded, nil
}
