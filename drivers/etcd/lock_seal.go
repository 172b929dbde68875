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

// The locks' seal and fence offset are two single keys beside the layout,
// which a purge keeps: locks_sealed (present once SealLocks ran, until
// RaiseLockFences) and lock_fence_offset (decimal, once RaiseLockFences
// raised the fences). A waiter's create compares locks_sealed absent and
// reads the offset in its transaction; each later look at the queue reads
// locks_sealed too, so no waiter is granted after the seal. Revisions
// cannot be set, so a fence is the key's create revision plus the offset
// its create read, or the one read at its grant if higher (a waiter
// queued before a raise is granted above its floor).

var _ driver.LockSealer = (*driverStore)(nil)

func (s *lockStore) sealedKey() string { return s.key("locks_sealed") }
func (s *lockStore) offsetKey() string { return s.key("lock_fence_offset") }

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

// offsetFence is a waiter key's fence: its create revision plus offset.
func offsetFence(rev, offset int64) (int64, error) {
	if offset > math.MaxInt64-rev {
		return 0, fmt.Errorf("etcd: create revision %d plus the lock fence offset %d passes the largest int64: %w",
			rev, offset, driver.ErrExhausted)
	}
	return rev + offset, nil
}

// SealLocks puts locks_sealed (driver.LockSealer); the put's revision is
// above every waiter key's create revision so far: that plus the offset,
// read in the same transaction, is the floor.
func (s *lockStore) SealLocks(ctx context.Context) (int64, error) {
	for attempt := 1; ; attempt++ {
		resp, err := s.cli.Txn(ctx).Then(clientv3.OpPut(s.sealedKey(), "true"), clientv3.OpGet(s.offsetKey())).Commit()
		if err = s.check(ctx, err); err != nil {
			if !retryable(err) {
				return 0, err
			}
			if err := s.backoff(ctx, attempt, err); err != nil {
				return 0, err
			}
			continue // the put is idempotent
		}
		offset, err := s.parseOffset(resp.Responses[1].GetResponseRange().Kvs)
		if err != nil {
			return 0, err
		}
		return offsetFence(resp.Header.Revision, offset)
	}
}

// RaiseLockFences raises lock_fence_offset to floor (a create revision is
// at least 1, so every fence is then above floor) and deletes the seal,
// on the offset key's revision it read.
func (s *lockStore) RaiseLockFences(ctx context.Context, floor int64) error {
	for attempt := 1; ; attempt++ {
		resp, err := s.cli.Get(ctx, s.offsetKey())
		if err = s.check(ctx, err); err == nil {
			var cur int64
			if cur, err = s.parseOffset(resp.Kvs); err != nil {
				return err
			}
			mod := int64(0)
			if len(resp.Kvs) > 0 {
				mod = resp.Kvs[0].ModRevision
			}
			var tr *clientv3.TxnResponse
			tr, err = s.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(s.offsetKey()), "=", mod)).
				Then(clientv3.OpPut(s.offsetKey(), strconv.FormatInt(max(cur, floor), 10)), clientv3.OpDelete(s.sealedKey())).Commit()
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
