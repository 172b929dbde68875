package etcd

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
)

// The locks' seal and fence offset are single keys beside the layout,
// which a purge keeps: locks_sealed (present once SealLocks ran, until
// RaiseLockFences), lock_fence_offset (decimal, once RaiseLockFences
// raised the fences) and locks_unsealed (decimal: the revision of the last
// seal a RaiseLockFences undid). A waiter's create compares locks_sealed
// absent and reads the offset in its transaction; each later look at the
// queue reads locks_sealed and locks_unsealed too, so no waiter is granted
// after a seal, even one undone between two looks (a waiter created
// before the seal's revision is refused). Revisions cannot be set, so a
// fence is the key's create revision plus the offset its create read, or
// the one read at its grant if higher (a waiter queued before a raise is
// granted above its floor). The offset only grows: one below an offset
// the store read is refused (readOffset).
//
// Both writers compare what they read: a seal or a raise whose answer was
// lost and that is applied later, after the other, changes nothing.

var _ driver.LockSealer = (*driverStore)(nil)

func (s *lockStore) sealedKey() string   { return s.key("locks_sealed") }
func (s *lockStore) offsetKey() string   { return s.key("lock_fence_offset") }
func (s *lockStore) unsealedKey() string { return s.key("locks_unsealed") }

// sealedSince reports whether locks_unsealed (a range response) names a
// seal after revision rev: a waiter created at rev was queued before it.
func (s *lockStore) sealedSince(kvs []*mvccpb.KeyValue, rev int64) (bool, error) {
	if len(kvs) == 0 {
		return false, nil
	}
	n, err := strconv.ParseInt(string(kvs[0].Value), 10, 64)
	if err != nil || n <= 0 {
		return false, fmt.Errorf("etcd: key %s is %q, not a revision: %w", kvs[0].Key, kvs[0].Value, driver.ErrCorrupt)
	}
	return n > rev, nil
}

func errLocksSealed(name string) error {
	return fmt.Errorf("etcd: lock %q: the store's locks are sealed (they moved to another store): %w", name, driver.ErrSealed)
}

// parseOffset reads lock_fence_offset from a range response; none is 0.
func (s *lockStore) parseOffset(kvs []*mvccpb.KeyValue) (int64, error) {
	if len(kvs) == 0 {
		return 0, nil
	}
	n, err := strconv.ParseInt(string(kvs[0].Value), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("etcd: key %s is %q, not a fence offset: %w", kvs[0].Key, kvs[0].Value, driver.ErrCorrupt)
	}
	return n, nil
}

// readOffset is parseOffset for an offset a fence or a floor is made
// with. Offsets only grow (RaiseLockFences never lowers one), so one below
// an offset the store read before is the key restored from before a raise
// (a snapshot, or written by hand): revisions do not make up for it, the
// fences would go back below those granted after the raise. It is refused
// until a raise puts it back at least there.
func (s *lockStore) readOffset(kvs []*mvccpb.KeyValue) (int64, error) {
	n, err := s.parseOffset(kvs)
	if err != nil {
		return 0, err
	}
	for {
		seen := s.offsetSeen.Load()
		if n < seen {
			return 0, fmt.Errorf("etcd: key %s: the lock fence offset is %d, below %d, which this store read before: "+
				"it went back (restored from a backup, or written by hand); raise the lock fences: %w",
				s.offsetKey(), n, seen, driver.ErrCorrupt)
		}
		if n == seen || s.offsetSeen.CompareAndSwap(seen, n) {
			return n, nil
		}
	}
}

// offsetFence is a waiter key's fence: its create revision plus offset.
func offsetFence(rev, offset int64) (int64, error) {
	if offset > math.MaxInt64-rev {
		return 0, fmt.Errorf("etcd: create revision %d plus the lock fence offset %d passes the largest int64: %w",
			rev, offset, driver.ErrExhausted)
	}
	return rev + offset, nil
}

// SealLocks puts locks_sealed (driver.LockSealer); the put's revision is
// above every waiter key's create revision so far: that plus the offset
// is the floor. The put compares the offset key's revision read before it:
// every RaiseLockFences rewrites that key, so a put applied late, after a
// raise that followed this call, fails rather than seal the locks again.
func (s *lockStore) SealLocks(ctx context.Context) (int64, error) {
	for attempt := 1; ; attempt++ {
		floor, done, err := s.sealOnce(ctx)
		if done || err == nil {
			return floor, err
		}
		if !retryable(err) {
			return 0, err
		}
		if err := s.backoff(ctx, attempt, err); err != nil {
			return 0, err
		}
	}
}

// sealOnce is one read and compared put of SealLocks; done without error
// is a put that lost its compare (a raise meanwhile): read again at once.
func (s *lockStore) sealOnce(ctx context.Context) (int64, bool, error) {
	for {
		resp, err := s.cli.Get(ctx, s.offsetKey())
		if err = s.check(ctx, err); err != nil {
			return 0, false, err
		}
		offset, err := s.readOffset(resp.Kvs)
		if err != nil {
			return 0, true, err
		}
		mod := int64(0)
		if len(resp.Kvs) > 0 {
			mod = resp.Kvs[0].ModRevision
		}
		tr, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(s.offsetKey()), "=", mod)).
			Then(clientv3.OpPut(s.sealedKey(), "true")).Commit()
		if err = s.check(ctx, err); err != nil {
			return 0, false, err // retried: the put is idempotent, and compared
		}
		if !tr.Succeeded {
			continue // raised meanwhile
		}
		floor, err := offsetFence(tr.Header.Revision, offset)
		return floor, true, err
	}
}

// RaiseLockFences raises lock_fence_offset to floor (a create revision is
// at least 1, so every fence is then above floor) and deletes the seal,
// recording its revision in locks_unsealed (the waiters queued before it
// stay refused). It compares the offset and seal keys' revisions it read,
// so a raise applied late, after a later seal, undoes nothing.
func (s *lockStore) RaiseLockFences(ctx context.Context, floor int64) error {
	for attempt := 1; ; attempt++ {
		resp, err := s.cli.Txn(ctx).Then(clientv3.OpGet(s.offsetKey()), clientv3.OpGet(s.sealedKey(), clientv3.WithKeysOnly())).Commit()
		if err = s.check(ctx, err); err == nil {
			offsetKVs := resp.Responses[0].GetResponseRange().Kvs
			sealKVs := resp.Responses[1].GetResponseRange().Kvs
			var cur int64
			if cur, err = s.parseOffset(offsetKVs); err != nil {
				return err
			}
			mod, sealMod := int64(0), int64(0)
			if len(offsetKVs) > 0 {
				mod = offsetKVs[0].ModRevision
			}
			ops := []clientv3.Op{clientv3.OpPut(s.offsetKey(), strconv.FormatInt(max(cur, floor), 10))}
			if len(sealKVs) > 0 {
				sealMod = sealKVs[0].ModRevision
				ops = append(ops, clientv3.OpDelete(s.sealedKey()), clientv3.OpPut(s.unsealedKey(), strconv.FormatInt(sealMod, 10)))
			}
			var tr *clientv3.TxnResponse
			tr, err = s.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(s.offsetKey()), "=", mod),
				clientv3.Compare(clientv3.ModRevision(s.sealedKey()), "=", sealMod)).Then(ops...).Commit()
			if err = s.check(ctx, err); err == nil {
				if tr.Succeeded {
					return nil
				}
				continue // written meanwhile: read again
			}
		}
		if !retryable(err) {
			return err
		}
		if err := s.backoff(ctx, attempt, err); err != nil {
			return err
		}
	}
}

// LocksSealed reads locks_sealed.
func (s *lockStore) LocksSealed(ctx context.Context) (bool, error) {
	resp, err := s.cli.Get(ctx, s.sealedKey(), clientv3.WithKeysOnly())
	if err = s.check(ctx, err); err != nil {
		return false, err
	}
	return len(resp.Kvs) > 0, nil
}
