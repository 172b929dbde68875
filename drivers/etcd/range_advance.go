package etcd

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
)

var _ driver.RangeAdvancer = (*driverStore)(nil)

// Advance raises key's next value to next (driver.RangeAdvancer): a
// compare-and-set on what it read, as Seal does. A lost answer is read
// again; the raise, if it was applied, is then found in place.
func (s *rangeStore) Advance(ctx context.Context, key string, next int64) (int64, error) {
	ctx = attempts(ctx) // failover: a cut raise is read again (attempts.go)
	k := s.rangeKey(key)
	for attempt := 1; ; attempt++ {
		base, had := s.memo(key)
		resp, err := s.cli.Get(ctx, k)
		if err = s.check(ctx, err); err != nil {
			if !retryable(err) {
				return 0, err
			}
			if err := s.backoff(ctx, attempt, err); err != nil {
				return 0, err
			}
			continue
		}
		m, exists, err := s.learn(key, resp.Kvs, base, had)
		if err != nil {
			return 0, err
		}
		switch {
		case m.sealed:
			return m.next, fmt.Errorf("range key %s is sealed at %d: %w", k, m.next, driver.ErrSealed)
		case exists && m.next >= next:
			return m.next, nil
		}
		cmp := clientv3.Compare(clientv3.CreateRevision(k), "=", 0)
		if exists {
			cmp = clientv3.Compare(clientv3.ModRevision(k), "=", m.mod)
		}
		tr, err := s.cli.Txn(ctx).If(cmp).Then(clientv3.OpPut(k, formatRange(next, false))).Commit()
		if err = s.check(ctx, err); err != nil {
			if exists {
				s.stale(key, m.mod)
			}
			if !retryable(err) {
				return 0, err
			}
			if err := s.backoff(ctx, attempt, err); err != nil {
				return 0, err
			}
			continue
		}
		if tr.Succeeded {
			create := m.create
			if !exists {
				create = tr.Header.Revision
			}
			s.remember(key, rangeMemo{next: next, mod: tr.Header.Revision, create: create})
			return m.next, nil
		}
	}
}
