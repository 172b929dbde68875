package etcd

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
)

// The key purged keeps, across purges, the highest slot fence they
// deleted: "slot_fence_floor=N". Lock fences need nothing: they are
// revisions, which only grow.

func (s *slotStore) parseFloor(kvs []*mvccpb.KeyValue) (int64, error) {
	if len(kvs) == 0 {
		return 0, nil
	}
	v, ok := strings.CutPrefix(string(kvs[0].Value), "slot_fence_floor=")
	n, err := strconv.ParseInt(v, 10, 64)
	if !ok || err != nil || n < 0 {
		return 0, fmt.Errorf("key %s holds %q: %w", kvs[0].Key, kvs[0].Value, driver.ErrCorrupt)
	}
	return n, nil
}

// Purge deletes every range, namespace, slot and owner key (driver.Purger)
// in one transaction that holds only if no key under the prefix changed
// since it read them all, and no lock key existed then, nor a slot whose
// term may still issue (ErrLocked, see driver.Purger): a lock or lease
// taken meanwhile stops it. The identity stays; the slot fence floor rises to
// the highest fence deleted.
func (s *driverStore) Purge(ctx context.Context) ([]string, error) {
	root := s.cfg.prefix + "/"
	for attempt := 1; ; attempt++ {
		// A store inside another's layout (created before Open refused
		// it) would delete that store's keys with its own.
		if err := s.checkNested(ctx); err != nil {
			return nil, err
		}
		resp, err := s.cli.Get(ctx, root, clientv3.WithPrefix())
		if err = s.check(ctx, err); err != nil {
			return nil, err
		}
		var floorKVs []*mvccpb.KeyValue
		for _, kv := range resp.Kvs {
			if string(kv.Key) == s.key("purged") {
				floorKVs = append(floorKVs, kv)
			}
		}
		floor, err := s.parseFloor(floorKVs)
		if err != nil {
			return nil, err
		}
		deleted := []string{}
		now := s.now()
		for _, kv := range resp.Kvs {
			if err := s.foreign(kv); err != nil {
				return nil, err
			}
			rest := strings.TrimPrefix(string(kv.Key), root)
			kind, name, _ := strings.Cut(rest, "/")
			switch kind {
			case "lock":
				lock, _, _ := strings.Cut(name, "/")
				return nil, fmt.Errorf("lock %q is held or waited on: %w", lock, driver.ErrLocked)
			case "range":
				deleted = append(deleted, "range "+name)
			case "ns":
				deleted = append(deleted, "namespace "+name)
			case "slot":
				deleted = append(deleted, "slot "+name)
				var r driver.SlotRecord
				if err := r.UnmarshalBinary(kv.Value); err != nil {
					// Its fence (and a term that may still issue) cannot
					// be kept: deleting it would lose them.
					return nil, fmt.Errorf("etcd: purge: slot key %s: %w", kv.Key, err)
				}
				floor = max(floor, r.Fence)
				// A term that may still issue stops the purge
				// (driver.Purger); the transaction's compare keeps it
				// from being written after this read.
				ns, num, _ := strings.Cut(name, "/")
				n, _ := strconv.Atoi(num)
				if err := r.PurgeRefusal(ns, n, now); err != nil {
					return nil, fmt.Errorf("etcd: purge: %w", err)
				}
			case "owner":
				deleted = append(deleted, "owner index "+name)
			}
		}
		ops := []clientv3.Op{clientv3.OpPut(s.key("purged"), "slot_fence_floor="+strconv.FormatInt(floor, 10))}
		for _, kind := range []string{"range", "ns", "slot", "owner"} {
			ops = append(ops, clientv3.OpDelete(s.key(kind)+"/", clientv3.WithPrefix()))
		}
		cmps := append(s.outerCmps(), clientv3.Compare(clientv3.ModRevision(root), "<", resp.Header.Revision+1).WithPrefix())
		tr, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err = s.check(ctx, err); err != nil {
			if !retryable(err) {
				return nil, err
			}
			if err := s.backoff(ctx, attempt, err); err != nil {
				return nil, err
			}
			continue
		}
		if tr.Succeeded {
			s.rmu.Lock()
			clear(s.ranges)
			s.rmu.Unlock()
			return deleted, nil
		}
	}
}

// foreign refuses a key of another store nested under this one's prefix
// (its prefix is, say, this one's + "/range"), which the purge would
// delete with this store's subtrees: any key on a lease (a live session's
// lock key: the purge would end its hold), or another store's metadata
// key (its range keys would start again at 0 in a new process).
func (s *driverStore) foreign(kv *mvccpb.KeyValue) error {
	k := string(kv.Key)
	if kv.Lease != 0 && !strings.HasPrefix(k, s.key("lock")+"/") {
		return fmt.Errorf("key %s is on etcd lease %x (a live session's lock key of a store nested under %s?): %w",
			k, kv.Lease, s.cfg.prefix, driver.ErrLocked)
	}
	if k != s.key("meta") && strings.HasSuffix(k, "/meta") && strings.HasPrefix(string(kv.Value), "id=") {
		return fmt.Errorf("key %s is the metadata of another store, nested under %s: purge it by its own prefix, or delete it first: %w",
			k, s.cfg.prefix, driver.ErrConfigMismatch)
	}
	return nil
}
