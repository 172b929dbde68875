// Package prefixdriver is a small third-party-style driver, the model for
// driver authors: it wraps another driver and keeps its data apart under a
// prefix, so several applications can share one store without seeing each
// other's keys. Range keys become "{prefix}/{key}"; namespaces and lock
// names, single path segments, become "{prefix}.{name}".
//
// It follows the driver rules (SPEC 12, checked by internal/testing/apitest):
// the driver type is unexported, and the one exported constructor,
// OpenStore, returns the checked *store.Store; its settings are one data
// struct, Options. Registered as "prefix", with options "driver" (the
// inner driver), "prefix", and "inner.{option}" passed on to the inner
// driver:
//
//	store.Open("prefix", map[string]string{"driver": "zookeeper", "prefix": "billing",
//		"inner.connectString": "zk1:2181"})
//
// The inner store is reached per call through (*store.Store).Raw, never
// kept: closing the prefix store closes it. Its whole conformance test is
// prefixdriver_test.go: a harness and one tck.Run.
package prefixdriver

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

func init() { store.Register("prefix", open) }

// Options configures a prefix store.
type Options struct {
	// Driver is the registered name of the inner driver; "memory" if empty.
	Driver string
	// Prefix keeps this store's data apart: non-empty, without '/' or '.'.
	Prefix string
	// Inner are the inner driver's options.
	Inner map[string]string
}

// OpenStore opens the inner driver and returns the checked store over it;
// storeOpts are the portable settings, as for store.Open.
func OpenStore(opts *Options, storeOpts ...store.Option) (*store.Store, error) {
	d, err := newDriver(opts)
	if err != nil {
		return nil, err
	}
	st, err := store.OpenDriver(d, storeOpts...)
	if err != nil {
		d.Close()
		return nil, err
	}
	return st, nil
}

// open is the registered factory (driver.Factory).
func open(options map[string]string) (driver.Store, error) {
	opts := &Options{Inner: map[string]string{}}
	rest := map[string]string{}
	for k, v := range options {
		if name, ok := strings.CutPrefix(k, "inner."); ok {
			opts.Inner[name] = v
		} else {
			rest[k] = v
		}
	}
	o := driver.NewOptions(rest)
	opts.Driver = o.String("driver", "memory")
	opts.Prefix = o.String("prefix", "")
	if err := o.Err(); err != nil {
		return nil, err
	}
	return newDriver(opts)
}

func newDriver(opts *Options) (*prefixStore, error) {
	if opts == nil {
		opts = &Options{}
	}
	if opts.Prefix == "" || strings.ContainsAny(opts.Prefix, "/.") {
		return nil, fmt.Errorf("option \"prefix\": value %q: must be non-empty without '/' or '.': %w",
			opts.Prefix, driver.ErrInvalidArgument)
	}
	inner, err := store.Open(cmp.Or(opts.Driver, "memory"), opts.Inner)
	if err != nil {
		return nil, err
	}
	return &prefixStore{inner: inner, p: opts.Prefix}, nil
}

// prefixStore is the wrapping driver store. It has the capabilities of the
// inner store; a missing one reports driver.ErrUnsupported.
type prefixStore struct {
	inner *store.Store
	p     string
}

func (s *prefixStore) Close() error { return s.inner.Close() }

// with calls f with the inner driver as D, for one call.
func with[D any](s *prefixStore, f func(D) error) error {
	return s.inner.Raw(func(d driver.Store) error {
		x, ok := d.(D)
		if !ok {
			return driver.ErrUnsupported
		}
		return f(x)
	})
}

func (s *prefixStore) key(k string) string  { return s.p + "/" + k }
func (s *prefixStore) name(n string) string { return s.p + "." + n }

func (s *prefixStore) Next(ctx context.Context, key string, step int64) (next int64, err error) {
	err = with(s, func(r driver.RangeStore) error {
		next, err = r.Next(ctx, s.key(key), step)
		return err
	})
	return next, err
}

func (s *prefixStore) Current(ctx context.Context, key string) (next int64, sealed bool, err error) {
	err = with(s, func(r driver.RangeStore) error {
		next, sealed, err = r.Current(ctx, s.key(key))
		return err
	})
	return next, sealed, err
}

func (s *prefixStore) Seal(ctx context.Context, key string) (next int64, err error) {
	err = with(s, func(r driver.RangeStore) error {
		next, err = r.Seal(ctx, s.key(key))
		return err
	})
	return next, err
}

func (s *prefixStore) Init(ctx context.Context, key string, next int64) error {
	return with(s, func(r driver.RangeStore) error { return r.Init(ctx, s.key(key), next) })
}

func (s *prefixStore) Keys(ctx context.Context) (keys []string, err error) {
	err = with(s, func(r driver.RangeStore) error {
		all, err := r.Keys(ctx)
		keys = strip(all, s.p+"/")
		return err
	})
	return keys, err
}

func (s *prefixStore) Acquire(ctx context.Context, req driver.AcquireRequest) (l driver.Lease, err error) {
	err = with(s, func(r driver.SlotLeaseStore) error {
		req.Namespace.Name = s.name(req.Namespace.Name)
		l, err = r.Acquire(ctx, req)
		l.Namespace = strings.TrimPrefix(l.Namespace, s.p+".")
		return err
	})
	return l, err
}

func (s *prefixStore) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	ns, out := l.Namespace, l
	err := with(s, func(r driver.SlotLeaseStore) error {
		l.Namespace = s.name(ns)
		var err error
		out, err = r.Renew(ctx, l)
		out.Namespace = ns
		return err
	})
	return out, err
}

func (s *prefixStore) Release(ctx context.Context, l driver.Lease, used int64) error {
	return with(s, func(r driver.SlotLeaseStore) error {
		l.Namespace = s.name(l.Namespace)
		return r.Release(ctx, l, used)
	})
}

func (s *prefixStore) Namespaces(ctx context.Context) (out []driver.Namespace, err error) {
	err = with(s, func(r driver.SlotLeaseStore) error {
		all, err := r.Namespaces(ctx)
		for _, ns := range all {
			if name, ok := strings.CutPrefix(ns.Name, s.p+"."); ok {
				ns.Name = name
				out = append(out, ns)
			}
		}
		return err
	})
	return out, err
}

func (s *prefixStore) Slots(ctx context.Context, ns string) (slots []driver.SlotInfo, err error) {
	err = with(s, func(r driver.SlotLeaseStore) error {
		slots, err = r.Slots(ctx, s.name(ns))
		return err
	})
	return slots, err
}

// SealNamespace seals the prefixed namespace.
func (s *prefixStore) SealNamespace(ctx context.Context, ns string) error {
	return with(s, func(r driver.SlotLeaseStore) error { return r.SealNamespace(ctx, s.name(ns)) })
}

func (s *prefixStore) Lock(ctx context.Context, name, owner string, wait bool) (l driver.Lock, err error) {
	err = with(s, func(r driver.Locker) error {
		l, err = r.Lock(ctx, s.name(name), owner, wait)
		return err
	})
	return l, err
}

func (s *prefixStore) Locks(ctx context.Context) (names []string, err error) {
	err = with(s, func(r driver.Locker) error {
		all, err := r.Locks(ctx)
		names = strip(all, s.p+".")
		return err
	})
	return names, err
}

func (s *prefixStore) Waiters(ctx context.Context, name string) (ws []driver.Waiter, err error) {
	err = with(s, func(r driver.Locker) error {
		ws, err = r.Waiters(ctx, s.name(name))
		return err
	})
	return ws, err
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
