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

// The key purged keeps, across purges, what the slots they deleted must
// not repeat: "slot_fence_floor=N" (the highest fence) and, on a second
// line, "slot_floor=M" (the highest floor the next term of a deleted slot
// would have had, SlotRecord.NewTerm: a released term's next floor, an
// unreleased one's ceiling). A slot never stored starts there, so its
// first term's fence and timestamps are above every purged term's, however
// wrong the clock that judged the purge safe (a host ahead takes a live
// term for ended). An older driver reads the second line as corrupt, and
// refuses rather than start below it. Lock fences need nothing: they are
// revisions, which only grow.

// parseFloor is the record a slot never stored stands for: the purged
// floors (zero without a purge).
func (s *slotStore) parseFloor(kvs []*mvccpb.KeyValue) (driver.SlotRecord, error) {
	if len(kvs) == 0 {
		return driver.SlotRecord{}, nil
	}
	bad := fmt.Errorf("key %s holds %q: %w", kvs[0].Key, kvs[0].Value, driver.ErrCorrupt)
	fence, floor, two := strings.Cut(string(kvs[0].Value), "\n")
	var r driver.SlotRecord
	var ok bool
	if fence, ok = strings.CutPrefix(fence, "slot_fence_floor="); !ok {
		return r, bad
	}
	if two {
		if floor, ok = strings.CutPrefix(floor, "slot_floor="); !ok {
			return r, bad
		}
	} else {
		floor = "0"
	}
	for _, f := range []struct {
		v string
		p *int64
	}{{fence, &r.Fence}, {floor, &r.NextFloor}} {
		n, err := strconv.ParseInt(f.v, 10, 64)
		if err != nil || n < 0 || strconv.FormatInt(n, 10) != f.v {
			return driver.SlotRecord{}, bad
		}
		*f.p = n
	}
	return r, nil
}

func formatFloor(r driver.SlotRecord) string {
	return "slot_fence_floor=" + strconv.FormatInt(r.Fence, 10) + "\nslot_floor=" + strconv.FormatInt(r.NextFloor, 10)
}

// Purge deletes every range, namespace, slot and owner key (driver.Purger)
// in one transaction that holds only if no key under the prefix changed
// since it read them all, and no lock key existed then, nor a slot whose
// term may still issue or whose next floor is ahead (ErrLocked), nor a
// sealed key or namespace (ErrSealed; see driver.Purger): a lock, lease or
// seal taken meanwhile stops it. The identity stays; the slot fence floor rises to
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
		var sealedKeys, sealedSpaces []string // see driver.Purger: never forgotten
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
				if _, sealed, err := parseRange(string(kv.Key), kv); err == nil && sealed {
					sealedKeys = append(sealedKeys, name)
				}
			case "ns":
				deleted = append(deleted, "namespace "+name)
				if ns, err := parseNamespace(name, string(kv.Key), kv.Value); err == nil && ns.Sealed {
					sealedSpaces = append(sealedSpaces, name)
				}
			case "slot":
				if !strings.Contains(name, "/") {
					continue // a namespace's slot tally (slot_tally.go)
				}
				deleted = append(deleted, "slot "+name)
				var r driver.SlotRecord
				if err := r.UnmarshalBinary(kv.Value); err != nil {
					// Its fence (and a term that may still issue) cannot
					// be kept: deleting it would lose them.
					return nil, fmt.Errorf("etcd: purge: slot key %s: %w", kv.Key, err)
				}
				floor.Fence = max(floor.Fence, r.Fence)
				floor.NextFloor = max(floor.NextFloor, r.NewTerm(driver.AcquireRequest{}, now).Floor)
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
		// After the ErrLocked refusals, as every driver orders them; the
		// transaction's compare keeps a seal made after this read.
		if err := driver.PurgeSealedRefusal(sealedKeys, sealedSpaces); err != nil {
			return nil, fmt.Errorf("etcd: purge: %w", err)
		}
		ops := []clientv3.Op{clientv3.OpPut(s.key("purged"), formatFloor(floor))}
		for _, kind := range []string{"range", "ns", "slot", "owner", "layout"} {
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
			s.forgetRanges()
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
