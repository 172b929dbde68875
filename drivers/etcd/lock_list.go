package etcd

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
)

// The Locker's listings: the names held or waited for, one page of them,
// and a name's queue.

// Locks lists the names with a waiter or holder key.
func (s *lockStore) Locks(ctx context.Context) ([]string, error) {
	p := s.key("lock") + "/"
	resp, err := s.cli.Get(ctx, p, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err = s.check(ctx, err); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := []string{}
	for _, kv := range resp.Kvs {
		name, _, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), p), "/")
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Waiters lists the queue in create-revision order; an empty queue is a
// name the store has forgotten (ErrNotFound).
func (s *lockStore) Waiters(ctx context.Context, name string) ([]driver.Waiter, error) {
	tr, err := s.cli.Txn(ctx).Then(clientv3.OpGet(s.lockPrefix(name), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend)), clientv3.OpGet(s.offsetKey())).Commit()
	if err = s.check(ctx, err); err != nil {
		return nil, err
	}
	kvs := tr.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return nil, fmt.Errorf("lock %q: nobody holds or waits for it: %w", name, driver.ErrNotFound)
	}
	offset, err := s.readOffset(tr.Responses[1].GetResponseRange().Kvs)
	if err != nil {
		return nil, err
	}
	out := make([]driver.Waiter, 0, len(kvs))
	for _, kv := range kvs {
		// The fence is the create revision plus the offset (lock_seal.go).
		out = append(out, driver.Waiter{Owner: string(kv.Value), Fence: kv.CreateRevision + offset})
	}
	return out, nil
}

// lockScan is the number of lock keys ListLocks reads per round trip.
const lockScan = 1000

// ListLocks lists one page of lock names (driver.LockLister). A name's
// keys are {prefix}/lock/NAME/..., whose order is not the names' ("a-b/"
// sorts before "a/"), so a page scans every waiter key, lockScan keys a
// round trip, and keeps the limit lowest names above after: etcd keeps a
// name only while it is held or waited for, so the scan is as long as the
// queues, and what it holds is one page.
func (s *lockStore) ListLocks(ctx context.Context, after string, limit int) ([]string, error) {
	p := s.key("lock") + "/"
	end := clientv3.GetPrefixRangeEnd(p)
	page := []string{}
	from := p
	rev := int64(0) // every round trip reads the first one's revision
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(lockScan), clientv3.WithKeysOnly()}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.cli.Get(ctx, from, opts...)
		if err = s.check(ctx, err); err != nil {
			return nil, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			name, _, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), p), "/")
			if name <= after || (len(page) == limit && name >= page[limit-1]) {
				continue
			}
			if i, found := slices.BinarySearch(page, name); !found {
				page = slices.Insert(page, i, name)
				page = page[:min(len(page), limit)]
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return page, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}
