package etcd

import (
	"context"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
)

// ListRanges reads one page of keys (driver.RangeLister): a range read
// from just above after, limited to the page, so a page costs the same
// wherever it starts. A key this store used is checked as Current checks
// it; the others are not remembered, so that a listing does not grow the
// store's memo of keys by every key it lists.
func (s *rangeStore) ListRanges(ctx context.Context, after string, limit int) ([]driver.KeyState, string, error) {
	p := s.key("range") + "/"
	from := p
	if after != "" {
		from = p + after + "\x00"
	}
	resp, err := s.cli.Get(ctx, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(p)), clientv3.WithLimit(int64(limit)))
	if err = s.check(ctx, err); err != nil {
		return nil, "", err
	}
	out := make([]driver.KeyState, 0, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		key := strings.TrimPrefix(string(kv.Key), p)
		var next int64
		var sealed bool
		if base, had := s.memo(key); had {
			m, _, err := s.learn(key, resp.Kvs[i:i+1], base, had)
			if err != nil {
				return nil, "", err
			}
			next, sealed = m.next, m.sealed
		} else if next, sealed, err = parseRange(string(kv.Key), kv); err != nil {
			return nil, "", err
		}
		out = append(out, driver.KeyState{Key: key, Next: next, Sealed: sealed})
	}
	return out, driver.NextAfter(out, limit), nil
}
