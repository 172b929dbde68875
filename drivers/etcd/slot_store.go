package etcd

import (
	"cmp"
	"context"
	"fmt"
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

// slotStore is the slot leases capability.
type slotStore struct {
	*etcdStore

	now func() int64 // the slot clock, ms since the epoch
}

func (s *slotStore) nsKey(ns string) string           { return s.key("ns", ns) }
func (s *slotStore) slotKey(ns string, n int) string  { return s.key("slot", ns, strconv.Itoa(n)) }
func (s *slotStore) ownerKey(ns, owner string) string { return s.key("owner", ns, owner) }

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

// rewrite applies change to l's slot and compare-and-sets the result on the
// mod revision it read; a conflict reads again.
func (s *slotStore) rewrite(ctx context.Context, l driver.Lease, change func(r driver.SlotRecord, now int64) (driver.SlotRecord, error)) (driver.SlotRecord, int64, error) {
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
func (s *slotStore) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	r, mod, err := s.rewrite(ctx, l, func(r driver.SlotRecord, now int64) (driver.SlotRecord, error) { return r.Renewed(l, now) })
	if err != nil {
		return l, err
	}
	nl := r.Lease(l.Namespace, l.Slot)
	nl.State = mod
	return nl, nil
}

// Release ends l's term; used < 0 means unknown.
func (s *slotStore) Release(ctx context.Context, l driver.Lease, used int64) error {
	_, _, err := s.rewrite(ctx, l, func(r driver.SlotRecord, now int64) (driver.SlotRecord, error) { return r.Released(l, used, now) })
	return err
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
func (s *slotStore) SeedSlot(ctx context.Context, want driver.Namespace, n int, fence, nextFloor int64) error {
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

// SealNamespace is not implemented yet.
func (s *slotStore) SealNamespace(ctx context.Context, ns string) error {
	return fmt.Errorf("seal of namespace %q: %w", ns, driver.ErrUnsupported)
}
