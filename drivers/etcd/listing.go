package etcd

import (
	"context"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
)

// ListRanges reads one page of keys (driver.RangeLister): a range read
// from just above after, limited to the page, so a page costs the same
// wherever it starts. A key this store used is checked as Current checks
// it; the others are not remembered, so that a listing does not grow the
// store's memo of keys by every key it lists.
func (s *rangeStore) ListRanges(ctx context.Context, after string, limit int) ([]driver.KeyState, error) {
	p := s.key("range") + "/"
	from := p
	if after != "" {
		from = p + after + "\x00"
	}
	resp, err := s.cli.Get(ctx, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(p)), clientv3.WithLimit(int64(limit)))
	if err = s.check(ctx, err); err != nil {
		return nil, err
	}
	out := make([]driver.KeyState, 0, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		key := strings.TrimPrefix(string(kv.Key), p)
		var next int64
		var sealed bool
		if base, had := s.memo(key); had {
			m, _, err := s.learn(key, resp.Kvs[i:i+1], base, had)
			if err != nil {
				return nil, err
			}
			next, sealed = m.next, m.sealed
		} else if next, sealed, err = parseRange(string(kv.Key), kv); err != nil {
			return nil, err
		}
		out = append(out, driver.KeyState{Key: key, Next: next, Sealed: sealed})
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
