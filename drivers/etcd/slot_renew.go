package etcd

import (
	"bytes"
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
)

// rewrite applies change to l's slot and compare-and-sets the result on the
// mod revision it read; a conflict reads again. With renew, the namespace
// key is read with the slot and compared too: a sealed namespace is
// ErrSealed, and a seal after the read fails the write.
func (s *slotStore) rewrite(ctx context.Context, l driver.Lease, renew bool, change func(r driver.SlotRecord, now int64) (driver.SlotRecord, error)) (driver.SlotRecord, int64, error) {
	ctx = seenCuts(ctx) // failover: a cut write is found by landed (attempts.go)
	k, nk := s.slotKey(l.Namespace, l.Slot), s.nsKey(l.Namespace)
	// The records of writes whose answers were lost, all compared at
	// revision sentOver: while the key stays there, none was applied (one
	// may still be); once it moved, at most one of them was, first.
	var sent [][]byte
	var sentOver int64
	for attempt := 1; ; attempt++ {
		resp, err := s.cli.Txn(ctx).Then(clientv3.OpGet(k), clientv3.OpGet(nk)).Commit()
		if err = s.check(ctx, err); err == nil {
			kvs, nsKVs := resp.Responses[0].GetResponseRange().Kvs, resp.Responses[1].GetResponseRange().Kvs
			if sent != nil && modOf(kvs) != sentOver {
				// Was one of them the change? Applying the change again
				// would fail: a released term is no longer the lease's (a
				// renewal would just renew again).
				r, landed, err := s.landed(ctx, k, kvs, sentOver, sent, !renew)
				if err != nil || landed {
					return r, modOf(kvs), err
				}
				sent = nil
			}
			if len(kvs) == 0 {
				return driver.SlotRecord{}, 0, fmt.Errorf("slot key %s is missing: %w", k, driver.ErrLeaseLost)
			}
			st := withRev(slotFrom(k, kvs[0], driver.SlotRecord{}), resp.Header.Revision)
			if st.err != nil {
				return driver.SlotRecord{}, 0, st.err
			}
			if err := s.guardFence(k, st); err != nil {
				return driver.SlotRecord{}, 0, err
			}
			r, cerr := change(st.r, s.now())
			if cerr != nil {
				return r, 0, cerr
			}
			cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", st.mod)}
			if renew {
				if len(nsKVs) == 0 {
					// Purged, or deleted by hand with its seal, if any:
					// the term cannot tell it is still allowed to grow.
					return driver.SlotRecord{}, 0, fmt.Errorf("namespace key %s is missing: %w", nk, driver.ErrLeaseLost)
				}
				ns, err := parseNamespace(l.Namespace, nk, nsKVs[0].Value)
				if err != nil {
					return driver.SlotRecord{}, 0, err
				}
				if ns.Sealed {
					return driver.SlotRecord{}, 0, sealedErr(l.Namespace)
				}
				cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(nk), "=", nsKVs[0].ModRevision))
			}
			data, merr := r.MarshalBinary()
			if merr != nil {
				return r, 0, merr
			}
			var tr *clientv3.TxnResponse
			tr, err = s.cli.Txn(ctx).If(cmps...).Then(clientv3.OpPut(k, string(data))).Commit()
			if err = s.check(ctx, err); err == nil {
				if tr.Succeeded {
					return r, tr.Header.Revision, nil
				}
				continue
			}
			if sentOver != st.mod {
				sent = nil
			}
			sent, sentOver = append(sent, data), st.mod
		}
		if !retryable(err) {
			return driver.SlotRecord{}, 0, err
		}
		if err := s.backoff(ctx, attempt, err); err != nil {
			return driver.SlotRecord{}, 0, err
		}
	}
}

// landed reports whether one of the writes sent, compared at revision
// rev, was applied, the key having moved since (kvs: as it is now): its
// record is the key's value, or, with history, was the key's first write
// after rev (another store may have written since: a release, then a new
// term). An identical record from another writer would be the same term's
// same change at the same millisecond, which the caller may count as its
// own. Compacted history cannot tell: an error saying so.
func (s *slotStore) landed(ctx context.Context, k string, kvs []*mvccpb.KeyValue, rev int64, sent [][]byte, history bool) (driver.SlotRecord, bool, error) {
	found := func(v []byte) (driver.SlotRecord, bool, error) {
		for _, d := range sent {
			if bytes.Equal(v, d) {
				var r driver.SlotRecord
				return r, true, r.UnmarshalBinary(d)
			}
		}
		return driver.SlotRecord{}, false, nil
	}
	if len(kvs) == 1 {
		if r, ok, err := found(kvs[0].Value); ok {
			return r, ok, err
		}
	}
	if !history {
		return driver.SlotRecord{}, false, nil
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range s.cli.Watch(wctx, k, clientv3.WithRev(rev+1)) {
		if err := wr.Err(); err != nil {
			return driver.SlotRecord{}, false, fmt.Errorf("slot key %s changed after a write whose answer was lost, and its history since revision %d cannot be read (%v): whether that write was applied is unknown: %w",
				k, rev, err, driver.ErrLeaseLost)
		}
		for _, ev := range wr.Events {
			if ev.Type != mvccpb.PUT {
				return driver.SlotRecord{}, false, nil
			}
			return found(ev.Kv.Value)
		}
	}
	return driver.SlotRecord{}, false, s.check(ctx, fmt.Errorf("the watch of slot key %s ended without an event", k))
}

// Renew continues l's term.
func (s *slotStore) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	r, mod, err := s.rewrite(ctx, l, true, func(r driver.SlotRecord, now int64) (driver.SlotRecord, error) { return r.Renewed(l, now) })
	if err != nil {
		return l, err
	}
	nl := r.Lease(l.Namespace, l.Slot)
	nl.State = mod
	return nl, nil
}

// Release ends l's term; used < 0 means unknown.
func (s *slotStore) Release(ctx context.Context, l driver.Lease, used int64) error {
	_, _, err := s.rewrite(ctx, l, false, func(r driver.SlotRecord, now int64) (driver.SlotRecord, error) { return r.Released(l, used, now) })
	return err
}
