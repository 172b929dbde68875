package etcd

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
)

// layoutKey holds the layout of a namespace's IDs (driver.LayoutKeeper):
// layout/{ns}, put once, never rewritten, deleted by a purge.
func (s *slotStore) layoutKey(ns string) string { return s.key("layout", ns) }

// KeepLayout records the namespace's layout unless it has one, and returns
// its layout (see driver.LayoutKeeper), creating a missing namespace as a
// seed does, in one transaction comparing what it read.
func (s *slotStore) KeepLayout(ctx context.Context, want driver.Namespace, layout string) (string, error) {
	nk, lk := s.nsKey(want.Name), s.layoutKey(want.Name)
	for attempt := 1; ; attempt++ {
		have, done, err := s.keepLayoutOnce(ctx, want, nk, lk, layout)
		if done {
			return have, err
		}
		if err != nil {
			if !retryable(err) {
				return "", err
			}
			if err := s.backoff(ctx, attempt, err); err != nil {
				return "", err
			}
		}
	}
}

func (s *slotStore) keepLayoutOnce(ctx context.Context, want driver.Namespace, nk, lk, layout string) (string, bool, error) {
	resp, err := s.cli.Txn(ctx).Then(clientv3.OpGet(nk), clientv3.OpGet(lk),
		clientv3.OpGet(s.key("slot", want.Name)+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1))).Commit()
	if err = s.check(ctx, err); err != nil {
		return "", false, err
	}
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(lk), "=", 0)}
	ops := []clientv3.Op{clientv3.OpPut(lk, layout)}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 0 {
		if slots := resp.Responses[2].GetResponseRange().Kvs; len(slots) > 0 {
			// As in Acquire: recreating it would unseal it silently.
			return "", true, fmt.Errorf("namespace key %s is missing but slot key %s exists (deleted by hand?): %w",
				nk, slots[0].Key, driver.ErrCorrupt)
		}
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(nk), "=", 0))
		ops = append(ops, clientv3.OpPut(nk, formatNamespace(want, false)))
	} else {
		have, err := parseNamespace(want.Name, nk, kvs[0].Value)
		if err != nil {
			return "", true, err
		}
		if have.Sealed {
			return "", true, sealedErr(want.Name)
		}
		if have.Limit != want.Limit || have.Tolerance != want.Tolerance {
			return "", true, fmt.Errorf("namespace has limit %d and tolerance %v, not limit %d and tolerance %v: %w",
				have.Limit, have.Tolerance, want.Limit, want.Tolerance, driver.ErrConfigMismatch)
		}
		if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
			if len(kvs[0].Value) == 0 {
				return "", true, fmt.Errorf("layout key %s is empty: %w", lk, driver.ErrCorrupt)
			}
			return string(kvs[0].Value), true, nil
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(nk), "=", kvs[0].ModRevision))
	}
	tr, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err = s.check(ctx, err); err != nil {
		return "", false, err
	}
	if !tr.Succeeded {
		return "", false, nil // another write came first: read again
	}
	return layout, true, nil
}

// Layout returns the namespace's layout, "" when it has none (see
// driver.LayoutKeeper).
func (s *slotStore) Layout(ctx context.Context, ns string) (string, error) {
	lk := s.layoutKey(ns)
	for attempt := 1; ; attempt++ {
		resp, err := s.cli.Get(ctx, lk)
		if err = s.check(ctx, err); err != nil {
			if !retryable(err) {
				return "", err
			}
			if err := s.backoff(ctx, attempt, err); err != nil {
				return "", err
			}
			continue
		}
		switch {
		case len(resp.Kvs) == 0:
			return "", nil
		case len(resp.Kvs[0].Value) == 0:
			return "", fmt.Errorf("layout key %s is empty: %w", lk, driver.ErrCorrupt)
		}
		return string(resp.Kvs[0].Value), nil
	}
}
