// Package prefix is a small third-party-style driver, the model for driver
// authors: it wraps another driver and keeps its data apart under a prefix,
// so several applications can share one store without seeing each other's
// keys. Range keys become "{prefix}/{key}"; namespaces and lock names,
// single path segments, become "{prefix}.{name}".
//
// Registered as "prefix", with options "driver" (the inner driver),
// "prefix", and "inner.{option}" passed on to the inner driver:
//
//	store.Open("prefix", map[string]string{"driver": "zookeeper", "prefix": "billing",
//		"inner.connectString": "zk1:2181"})
//
// Its whole conformance test is prefix_test.go: a harness and one tck.Run.
package prefix

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

func init() { store.Register("prefix", Open) }

// Open opens the inner driver named by the "driver" option.
func Open(options map[string]string) (driver.Store, error) {
	inner := map[string]string{}
	rest := map[string]string{}
	for k, v := range options {
		if name, ok := strings.CutPrefix(k, "inner."); ok {
			inner[name] = v
		} else {
			rest[k] = v
		}
	}
	o := driver.NewOptions(rest)
	name := o.String("driver", "memory")
	prefix := o.String("prefix", "")
	if err := o.Err(); err != nil {
		return nil, err
	}
	if prefix == "" || strings.ContainsAny(prefix, "/.") {
		return nil, fmt.Errorf("option \"prefix\": value %q: must be non-empty without '/' or '.': %w",
			prefix, driver.ErrInvalidArgument)
	}
	st, err := store.Open(name, inner)
	if err != nil {
		return nil, err
	}
	return Wrap(st.Driver(), prefix), nil
}

// Wrap returns d with every key, namespace and lock name under prefix.
func Wrap(d driver.Store, prefix string) *Store { return &Store{d: d, p: prefix} }

// Store is the wrapping driver store. It has the capabilities of the inner
// store; a missing one reports driver.ErrUnsupported.
type Store struct {
	d driver.Store
	p string
}

func (s *Store) Close() error { return s.d.Close() }

func (s *Store) key(k string) string  { return s.p + "/" + k }
func (s *Store) name(n string) string { return s.p + "." + n }

func (s *Store) ranges() (driver.RangeStore, error) {
	if r, ok := s.d.(driver.RangeStore); ok {
		return r, nil
	}
	return nil, driver.ErrUnsupported
}

func (s *Store) Next(ctx context.Context, key string, step int64) (int64, error) {
	r, err := s.ranges()
	if err != nil {
		return 0, err
	}
	return r.Next(ctx, s.key(key), step)
}

func (s *Store) Current(ctx context.Context, key string) (int64, bool, error) {
	r, err := s.ranges()
	if err != nil {
		return 0, false, err
	}
	return r.Current(ctx, s.key(key))
}

func (s *Store) Seal(ctx context.Context, key string) (int64, error) {
	r, err := s.ranges()
	if err != nil {
		return 0, err
	}
	return r.Seal(ctx, s.key(key))
}

func (s *Store) Init(ctx context.Context, key string, next int64) error {
	r, err := s.ranges()
	if err != nil {
		return err
	}
	return r.Init(ctx, s.key(key), next)
}

func (s *Store) Keys(ctx context.Context) ([]string, error) {
	r, err := s.ranges()
	if err != nil {
		return nil, err
	}
	all, err := r.Keys(ctx)
	return strip(all, s.p+"/"), err
}

func (s *Store) slots() (driver.SlotLeaseStore, error) {
	if r, ok := s.d.(driver.SlotLeaseStore); ok {
		return r, nil
	}
	return nil, driver.ErrUnsupported
}

func (s *Store) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	r, err := s.slots()
	if err != nil {
		return driver.Lease{}, err
	}
	req.Namespace.Name = s.name(req.Namespace.Name)
	l, err := r.Acquire(ctx, req)
	l.Namespace = strings.TrimPrefix(l.Namespace, s.p+".")
	return l, err
}

func (s *Store) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	r, err := s.slots()
	if err != nil {
		return l, err
	}
	ns := l.Namespace
	l.Namespace = s.name(ns)
	l, err = r.Renew(ctx, l)
	l.Namespace = ns
	return l, err
}

func (s *Store) Release(ctx context.Context, l driver.Lease, used int64) error {
	r, err := s.slots()
	if err != nil {
		return err
	}
	l.Namespace = s.name(l.Namespace)
	return r.Release(ctx, l, used)
}

func (s *Store) Namespaces(ctx context.Context) ([]driver.Namespace, error) {
	r, err := s.slots()
	if err != nil {
		return nil, err
	}
	all, err := r.Namespaces(ctx)
	var out []driver.Namespace
	for _, ns := range all {
		if name, ok := strings.CutPrefix(ns.Name, s.p+"."); ok {
			ns.Name = name
			out = append(out, ns)
		}
	}
	return out, err
}

func (s *Store) Slots(ctx context.Context, ns string) ([]driver.SlotInfo, error) {
	r, err := s.slots()
	if err != nil {
		return nil, err
	}
	return r.Slots(ctx, s.name(ns))
}

// SealNamespace seals the prefixed namespace.
func (s *Store) SealNamespace(ctx context.Context, ns string) error {
	r, err := s.slots()
	if err != nil {
		return err
	}
	return r.SealNamespace(ctx, s.name(ns))
}

func (s *Store) locker() (driver.Locker, error) {
	if r, ok := s.d.(driver.Locker); ok {
		return r, nil
	}
	return nil, driver.ErrUnsupported
}

func (s *Store) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	r, err := s.locker()
	if err != nil {
		return nil, err
	}
	return r.Lock(ctx, s.name(name), owner, wait)
}

func (s *Store) Locks(ctx context.Context) ([]string, error) {
	r, err := s.locker()
	if err != nil {
		return nil, err
	}
	all, err := r.Locks(ctx)
	return strip(all, s.p+"."), err
}

func (s *Store) Waiters(ctx context.Context, name string) ([]driver.Waiter, error) {
	r, err := s.locker()
	if err != nil {
		return nil, err
	}
	return r.Waiters(ctx, s.name(name))
}

// strip keeps the names under prefix, without it, sorted.
func strip(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if rest, ok := strings.CutPrefix(n, prefix); ok {
			out = append(out, rest)
		}
	}
	sort.Strings(out)
	return out
}
