package etcd

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
)

// Keys of the slot capability, under the prefix:
//
//	ns/{ns}            limit=N and tolerance=MS lines, and sealed=true once
//	                   sealed (a namespace a seal created has limit=0)
//	slot/{ns}/{n}      the slot's driver.SlotRecord, MarshalBinary
//	owner/{ns}/{owner} the owner index: slot numbers, most recent first
//	layout/{ns}        the layout of the namespace's IDs (slot_layout.go)
//
// Time is the clock of the host that writes (s.now): etcd stamps no time
// on a write (docs/design.md, etcd).

// slotStore is the slot leases capability.
type slotStore struct {
	*etcdStore

	now func() int64 // the slot clock, ms since the epoch

	mu     sync.Mutex
	fences map[string]seenFence // by slot key (guardFence)
}

func (s *slotStore) nsKey(ns string) string           { return s.key("ns", ns) }
func (s *slotStore) slotKey(ns string, n int) string  { return s.key("slot", ns, strconv.Itoa(n)) }
func (s *slotStore) ownerKey(ns, owner string) string { return s.key("owner", ns, owner) }

// formatNamespace is the value of a namespace key; sealed only from
// SealNamespace (a request's Namespace.Sealed means nothing).
func formatNamespace(ns driver.Namespace, sealed bool) string {
	v := fmt.Sprintf("limit=%d\ntolerance=%d", ns.Limit, ns.Tolerance.Milliseconds())
	if sealed {
		v += sealedLine
	}
	return v
}

// sealedLine ends the value of a sealed namespace's key (SealNamespace).
const sealedLine = "\nsealed=true"

func parseNamespace(name, k string, v []byte) (driver.Namespace, error) {
	var limit, tol int64
	settings, sealed := strings.CutSuffix(string(v), sealedLine)
	if _, err := fmt.Sscanf(settings, "limit=%d\ntolerance=%d", &limit, &tol); err != nil || limit < 0 || (limit == 0 && !sealed) || tol < 0 ||
		settings != fmt.Sprintf("limit=%d\ntolerance=%d", limit, tol) {
		return driver.Namespace{}, fmt.Errorf("namespace key %s holds %q: %w", k, v, driver.ErrCorrupt)
	}
	return driver.Namespace{Name: name, Limit: int(limit), Tolerance: time.Duration(tol) * time.Millisecond, Sealed: sealed}, nil
}

func sealedErr(ns string) error {
	return fmt.Errorf("namespace %q is sealed: %w", ns, driver.ErrSealed)
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
// the key's mod revision (0: never stored), and the revision of the read
// (0: not read, a record just written).
type slotState struct {
	r    driver.SlotRecord
	err  error
	mod  int64
	rev  int64
	hole bool // missing, and slot keys were deleted by hand (err says so)
}

func withRev(st slotState, rev int64) slotState {
	st.rev = rev
	return st
}

func modOf(kvs []*mvccpb.KeyValue) int64 {
	if len(kvs) == 0 {
		return 0
	}
	return kvs[0].ModRevision
}

// seenFence is the highest fence a store saw of a slot (a
// driver.FenceMark: etcd's guard orders a slot's states by the fence
// alone), and the lowest revision at which it saw it.
type seenFence struct {
	mark driver.SlotMark
	rev  int64
}

// guardFence refuses a slot state whose fence is below the highest this
// store saw of the slot at a revision not after the state's (ErrCorrupt):
// a record put back from a backup, or a key deleted by hand, would
// otherwise get a fence and a floor handed out before. A read older than
// the sighting (sent before a concurrent call's write) is no evidence. A
// slot never stored has the purged fence floor, which a purge raises to
// every fence it deleted, so only a delete by hand trips it.
func (s *slotStore) guardFence(k string, st slotState) error {
	if st.err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen, ok := s.fences[k]
	if why := seen.mark.Behind(st.r); ok && why != "" && st.rev >= seen.rev {
		return fmt.Errorf("slot key %s has %s seen earlier by this store (restored from a backup, or deleted by hand): %w",
			k, why, driver.ErrCorrupt)
	}
	// A higher fence, or the same seen at a lower revision.
	if got := driver.FenceMark(st.r.Fence); !ok || got.Fence() > seen.mark.Fence() || got == seen.mark && st.rev < seen.rev {
		if s.fences == nil {
			s.fences = map[string]seenFence{}
		}
		s.fences[k] = seenFence{got, st.rev}
	}
	return nil
}

// slotFrom decodes a slot key; a slot never stored (kv nil) is unused, the
// record purges left for it (parseFloor).
func slotFrom(k string, kv *mvccpb.KeyValue, unused driver.SlotRecord) slotState {
	if kv == nil {
		return slotState{r: unused}
	}
	var r driver.SlotRecord
	if err := r.UnmarshalBinary(kv.Value); err != nil {
		return slotState{err: fmt.Errorf("slot key %s: %w", k, err), mod: kv.ModRevision} // err wraps ErrCorrupt
	}
	return slotState{r: r, mod: kv.ModRevision}
}

// Namespaces lists every namespace, sorted by name.
func (s *slotStore) Namespaces(ctx context.Context) ([]driver.Namespace, error) {
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
func (s *slotStore) Slots(ctx context.Context, name string) ([]driver.SlotInfo, error) {
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
		st := slotFrom(string(kv.Key), kv, driver.SlotRecord{})
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
func (s *slotStore) SeedSlot(ctx context.Context, want driver.Namespace, n int, fence, nextFloor int64) error {
	ctx = attempts(ctx) // failover: a cut seed is read again (attempts.go)
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

func (s *slotStore) seedOnce(ctx context.Context, want driver.Namespace, nk, sk string, n int, fence, nextFloor int64) (bool, error) {
	ops := append([]clientv3.Op{clientv3.OpGet(nk), clientv3.OpGet(sk), clientv3.OpGet(s.key("purged"))}, s.tallyOps(want.Name)...)
	resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
	if err = s.check(ctx, err); err != nil {
		return false, err
	}
	floor, err := s.parseFloor(resp.Responses[2].GetResponseRange().Kvs)
	if err != nil {
		return true, err
	}
	tl, err := s.parseTally(resp.Responses[3].GetResponseRange(), resp.Responses[4].GetResponseRange())
	if err != nil {
		return true, err
	}
	cmps := []clientv3.Cmp{}
	ops = nil
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 0 {
		if slots := resp.Responses[3].GetResponseRange().Kvs; len(slots) > 0 {
			// As in Acquire: recreating it would unseal it silently.
			return true, fmt.Errorf("namespace key %s is missing but slot key %s exists (deleted by hand?): %w",
				nk, slots[0].Key, driver.ErrCorrupt)
		}
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(nk), "=", 0))
		ops = append(ops, clientv3.OpPut(nk, formatNamespace(want, false)))
	} else {
		have, err := parseNamespace(want.Name, nk, kvs[0].Value)
		if err != nil {
			return true, err
		}
		if have.Sealed {
			return true, sealedErr(want.Name)
		}
		if have.Limit != want.Limit || have.Tolerance != want.Tolerance {
			return true, fmt.Errorf("namespace has limit %d and tolerance %v, not limit %d and tolerance %v: %w",
				have.Limit, have.Tolerance, want.Limit, want.Tolerance, driver.ErrConfigMismatch)
		}
		// A seal rewrites the key: comparing it keeps the seed from
		// landing after a SealNamespace that returned since this read.
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(nk), "=", kvs[0].ModRevision))
	}
	var kv *mvccpb.KeyValue
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
		kv = kvs[0]
	} else if err := tl.hole(want.Name); err != nil {
		return true, fmt.Errorf("slot %d: %w", n, err)
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
		// And the purged fence floor: a purge meanwhile may have deleted
		// the slot, whose fence is then only in the floor.
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(sk), "=", st.mod),
			clientv3.Compare(clientv3.ModRevision(s.key("purged")), "=", modOf(resp.Responses[2].GetResponseRange().Kvs)))
		ops = append(ops, clientv3.OpPut(sk, string(data)))
		if kv == nil {
			ops = append(ops, s.bump(want.Name, tl)) // a slot key created: counted
		}
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

// SealNamespace seals namespace name (see driver.SlotLeaseStore): the
// namespace key gets a sealed=true line, in a transaction comparing the
// key's mod revision; Acquire and Renew compare that revision in their
// writes, so none lands after the seal. A missing namespace is created
// sealed, with limit 0.
func (s *slotStore) SealNamespace(ctx context.Context, name string) error {
	ctx = attempts(ctx) // failover: a cut seal is read again (attempts.go)
	nk := s.nsKey(name)
	for attempt := 1; ; attempt++ {
		resp, err := s.cli.Get(ctx, nk)
		if err = s.check(ctx, err); err == nil {
			cmp := clientv3.Compare(clientv3.CreateRevision(nk), "=", 0)
			ns := driver.Namespace{Name: name}
			if len(resp.Kvs) == 1 {
				have, err := parseNamespace(name, nk, resp.Kvs[0].Value)
				if err != nil {
					return err
				}
				if have.Sealed {
					return nil
				}
				ns.Limit, ns.Tolerance = have.Limit, have.Tolerance
				cmp = clientv3.Compare(clientv3.ModRevision(nk), "=", resp.Kvs[0].ModRevision)
			}
			var tr *clientv3.TxnResponse
			tr, err = s.cli.Txn(ctx).If(cmp).Then(clientv3.OpPut(nk, formatNamespace(ns, true))).Commit()
			if err = s.check(ctx, err); err == nil {
				if tr.Succeeded {
					return nil
				}
				continue // written meanwhile: read it again
			}
		}
		// After an unknown outcome the next read tells.
		if !retryable(err) {
			return err
		}
		if err := s.backoff(ctx, attempt, err); err != nil {
			return err
		}
	}
}
