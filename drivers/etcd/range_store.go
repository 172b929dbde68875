package etcd

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
)

// A range key's value is the next value in decimal, ":sealed" appended
// once sealed.
const sealedSuffix = ":sealed"

// rangeStore is the ranges capability: it remembers what it last wrote or
// read of each key, so that Next is one round trip.
type rangeStore struct {
	*etcdStore

	mu     sync.Mutex
	ranges map[string]rangeMemo
}

// rangeMemo is what the store last wrote or read of a key: with it, Next
// is one transaction comparing mod (one round trip while the store is the
// only writer). create tells a deleted and recreated key apart.
type rangeMemo struct {
	next   int64
	sealed bool
	mod    int64 // -1: unknown (a write's outcome was lost), so re-read
	create int64
}

func (s *rangeStore) rangeKey(k string) string { return s.key("range", k) }

func parseRange(k string, kv *mvccpb.KeyValue) (int64, bool, error) {
	v := string(kv.Value)
	num, sealed := strings.CutSuffix(v, sealedSuffix)
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != num {
		return 0, false, fmt.Errorf("range key %s holds %q: %w", k, v, driver.ErrCorrupt)
	}
	return n, sealed, nil
}

func formatRange(next int64, sealed bool) string {
	v := strconv.FormatInt(next, 10)
	if sealed {
		v += sealedSuffix
	}
	return v
}

func (s *rangeStore) memo(key string) (rangeMemo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.ranges[key]
	return m, ok
}

// remember keeps m unless the memo already holds a later revision (a
// concurrent call of this store answered after it).
func (s *rangeStore) remember(key string, m rangeMemo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.ranges[key]; ok && old.mod > m.mod && old.create == m.create {
		return
	}
	s.ranges[key] = m
}

// forgetRanges drops every memo (a purge deleted the keys): each key is
// read again before its next write.
func (s *rangeStore) forgetRanges() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.ranges)
}

// stale marks the memo unknown after a write with a lost answer, if it
// is still the one that write compared with.
func (s *rangeStore) stale(key string, used int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.ranges[key]; ok && m.mod == used {
		m.mod = -1
		s.ranges[key] = m
	}
}

// learn checks what the server holds of key against base, the memo as it
// was before the call sent its request (had: there was one), and
// remembers it: a key the store used that is now missing or has another
// create revision is ErrRecreated, a value below one seen is ErrCorrupt.
func (s *rangeStore) learn(key string, kvs []*mvccpb.KeyValue, base rangeMemo, had bool) (rangeMemo, bool, error) {
	k := s.rangeKey(key)
	if len(kvs) == 0 {
		if had {
			return rangeMemo{}, false, fmt.Errorf("range key %s, used by this store, is missing: %w", k, driver.ErrRecreated)
		}
		return rangeMemo{}, false, nil
	}
	kv := kvs[0]
	if !had {
		// Another call of this store may have used the key since this one
		// was sent: a create revision other than the one it remembers is
		// a key deleted and created again, whichever this call saw.
		if cur, ok := s.memo(key); ok && kv.CreateRevision != cur.create {
			return rangeMemo{}, false, fmt.Errorf("range key %s was deleted and created again (create revision %d, was %d): %w",
				k, kv.CreateRevision, cur.create, driver.ErrRecreated)
		}
	}
	if had && kv.CreateRevision != base.create {
		return rangeMemo{}, false, fmt.Errorf("range key %s was deleted and created again (create revision %d, was %d): %w",
			k, kv.CreateRevision, base.create, driver.ErrRecreated)
	}
	n, sealed, err := parseRange(k, kv)
	if err != nil {
		return rangeMemo{}, false, err
	}
	if had && n < base.next {
		return rangeMemo{}, false, fmt.Errorf("range key %s went back from %d to %d (a restored backup?): %w", k, base.next, n, driver.ErrCorrupt)
	}
	m := rangeMemo{next: n, sealed: sealed, mod: kv.ModRevision, create: kv.CreateRevision}
	s.remember(key, m)
	return m, true, nil
}

// Next compare-and-sets the remembered value; on a conflict the answer
// carries the key, and the next attempt uses it.
func (s *rangeStore) Next(ctx context.Context, key string, step int64) (int64, error) {
	if err := driver.CheckStep(step); err != nil {
		return 0, err
	}
	// Failover: a round trip cut short is an unknown outcome, re-read. The
	// cut is seen here, not resent by clientv3 unseen: its range may be a
	// gap, which the contract allows only where the outcome was unknown
	// (the UnknownOutcome event below).
	ctx = seenCuts(ctx)
	k := s.rangeKey(key)
	fresh := false // the memo was read from the server by this call
	for attempt := 1; ; attempt++ {
		m, ok := s.memo(key)
		var cmp clientv3.Cmp
		if ok {
			if m.sealed && m.mod >= 0 {
				return 0, driver.ErrSealed
			}
			cmp = clientv3.Compare(clientv3.ModRevision(k), "=", m.mod)
		} else {
			cmp = clientv3.Compare(clientv3.CreateRevision(k), "=", 0)
		}
		cur := m.next
		if cur > math.MaxInt64-step {
			if fresh {
				return 0, fmt.Errorf("next %d + step %d passes the largest int64: %w", cur, step, driver.ErrExhausted)
			}
			// The memo may be stale (another store may have sealed the
			// key, which the contract reports first): read before refusing.
			resp, err := s.cli.Get(ctx, k)
			if err != nil {
				if err = s.check(ctx, err); !retryable(err) {
					return 0, err
				}
				if err := s.backoff(ctx, attempt, err); err != nil {
					return 0, err
				}
				continue
			}
			s.check(ctx, nil)
			got, exists, err := s.learn(key, resp.Kvs, m, ok)
			if err != nil {
				return 0, err
			}
			if exists && got.sealed {
				return 0, driver.ErrSealed
			}
			fresh = true
			continue
		}
		resp, err := s.cli.Txn(ctx).If(cmp).Then(clientv3.OpPut(k, formatRange(cur+step, false))).Else(clientv3.OpGet(k)).Commit()
		if err != nil {
			if ok {
				s.stale(key, m.mod)
			}
			// The write may have been applied: its values are a gap.
			s.emit(driver.Event{Kind: driver.UnknownOutcome, Key: key, Value: cur, Count: step, Err: err})
			if err = s.check(ctx, err); !retryable(err) {
				return 0, err
			}
			if err := s.backoff(ctx, attempt, err); err != nil {
				return 0, err
			}
			continue
		}
		s.check(ctx, nil)
		if resp.Succeeded {
			create := resp.Header.Revision
			if ok {
				create = m.create
			}
			s.remember(key, rangeMemo{next: cur + step, mod: resp.Header.Revision, create: create})
			return cur, nil
		}
		got, exists, err := s.learn(key, resp.Responses[0].GetResponseRange().Kvs, m, ok)
		if err != nil {
			return 0, err
		}
		if exists && got.sealed {
			return 0, driver.ErrSealed
		}
		fresh = true
	}
}

// Current reads the key; a missing one is (0, false).
func (s *rangeStore) Current(ctx context.Context, key string) (int64, bool, error) {
	base, had := s.memo(key)
	resp, err := s.cli.Get(ctx, s.rangeKey(key))
	if err = s.check(ctx, err); err != nil {
		return 0, false, err
	}
	m, _, err := s.learn(key, resp.Kvs, base, had)
	return m.next, m.sealed, err
}

// Seal rewrites the value with the suffix, compare-and-set on what it read.
func (s *rangeStore) Seal(ctx context.Context, key string) (int64, error) {
	ctx = attempts(ctx) // failover: a cut seal is read again (attempts.go)
	return s.rewrite(ctx, key, func(m rangeMemo, _ bool) (int64, bool, bool, error) {
		// Sealing twice is harmless: a pass after a lost answer reads
		// what stands.
		return m.next, true, !m.sealed, nil
	})
}

// rewrite is Seal's and Advance's loop: it reads key, asks decide what to
// write on what it read (exists: the key is there), and writes that
// compare-and-set on the revision it read. An error of the server that
// can pass or a lost answer (the write, if applied, is then found in
// place) is read again. A lost race goes on from the key as the failed
// compare found it, as Next does: reading it again made each retry two
// round trips, a window that other stores' Next calls on a busy key, one
// round trip each, overtook at every retry until the call's deadline. It
// returns the next value read, with decide's error if any.
func (s *rangeStore) rewrite(ctx context.Context, key string,
	decide func(m rangeMemo, exists bool) (next int64, sealed, write bool, err error)) (int64, error) {
	k := s.rangeKey(key)
	var (
		kvs   []*mvccpb.KeyValue // the key as last read
		known bool               // kvs is the answer of the last failed compare
		base  rangeMemo          // the memo before kvs was read, which learn checks it against
		had   bool
	)
	for attempt := 1; ; attempt++ {
		if !known {
			base, had = s.memo(key)
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
			kvs = resp.Kvs
		}
		known = false
		m, exists, err := s.learn(key, kvs, base, had)
		if err != nil {
			return 0, err
		}
		next, sealed, write, err := decide(m, exists)
		if err != nil || !write {
			return m.next, err
		}
		cmp := clientv3.Compare(clientv3.CreateRevision(k), "=", 0)
		if exists {
			cmp = clientv3.Compare(clientv3.ModRevision(k), "=", m.mod)
		}
		// Another call of this store may have moved the memo since the
		// read: the failed compare's answer is checked against it.
		base, had = s.memo(key)
		tr, err := s.cli.Txn(ctx).If(cmp).Then(clientv3.OpPut(k, formatRange(next, sealed))).Else(clientv3.OpGet(k)).Commit()
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
			s.remember(key, rangeMemo{next: next, sealed: sealed, mod: tr.Header.Revision, create: create})
			return m.next, nil
		}
		kvs, known = tr.Responses[0].GetResponseRange().Kvs, true
	}
}

// Init creates the key at next, or accepts one already at next. A key
// this store used is never created again: Init only checks it, as Current
// does (a missing one is ErrRecreated).
func (s *rangeStore) Init(ctx context.Context, key string, next int64) error {
	k := s.rangeKey(key)
	if base, had := s.memo(key); had {
		resp, err := s.cli.Get(ctx, k)
		if err = s.check(ctx, err); err != nil {
			return err
		}
		m, _, err := s.learn(key, resp.Kvs, base, true)
		if err != nil {
			return err
		}
		if m.next != next {
			return fmt.Errorf("range key %s exists at %d, not %d: %w", k, m.next, next, driver.ErrConfigMismatch)
		}
		return nil
	}
	resp, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, formatRange(next, false))).Else(clientv3.OpGet(k)).Commit()
	if err = s.check(ctx, err); err != nil {
		// A lost answer: the key may now exist at next; a retried Init
		// accepts that.
		return err
	}
	if resp.Succeeded {
		s.remember(key, rangeMemo{next: next, mod: resp.Header.Revision, create: resp.Header.Revision})
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return fmt.Errorf("range key %s vanished during Init; try again", k)
	}
	n, _, err := parseRange(k, kvs[0])
	if err != nil {
		return err
	}
	if n != next {
		return fmt.Errorf("range key %s exists at %d, not %d: %w", k, n, next, driver.ErrConfigMismatch)
	}
	return nil
}

// Keys lists the range keys, sorted.
func (s *rangeStore) Keys(ctx context.Context) ([]string, error) {
	p := s.key("range") + "/"
	resp, err := s.cli.Get(ctx, p, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err = s.check(ctx, err); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out = append(out, strings.TrimPrefix(string(kv.Key), p))
	}
	sort.Strings(out)
	return out, nil
}
