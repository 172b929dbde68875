// Package storehttp gives the HTTP handlers an operator points probes and
// eyes at, for a store and the generators built on it: liveness,
// readiness, and a status page (HTML rendered on the server, and the same
// as JSON). An application mounts them where it likes:
//
//	mon := storehttp.New(storehttp.Options{})
//	st, err := store.Open("zookeeper", options, store.WithObserver(mon.Observer()))
//	mon.Attach(st)
//	seg, err := idgen.NewSegment(ctx, st, "orders", idgen.SegmentOptions{})
//	mon.Add(seg)
//	http.Handle("/healthz", mon.Live())
//	http.Handle("/readyz", mon.Ready())
//	http.Handle("/status", mon.Status())
//	http.Handle("/status.json", mon.StatusJSON())
//
// # What it shows
//
// The store: its driver, identity, incarnation and connection state (from
// the driver's events, and a Ping made for each request), and its last
// events. Each generator added: a Segment's current range, the value that
// starts its next prefetch, its refills and waits; a Snowflake's slot,
// fence, floor, expiry and ceiling, with the time its lease has left drawn
// as a bar. The locks the process holds (from the store's events: name,
// fence, since when) and those it lost, with the cause. Errors of the
// store's calls, counted by kind (store.Outcome), and the last few.
//
// Nothing on it writes, and nothing secret is shown: every error text
// passes through the store's redaction (driver.Redact). The page needs no
// JavaScript; it reloads itself every RefreshEvery with an HTML meta tag.
//
// It is named like net/http/pprof and promhttp: the HTTP handlers of the
// package it serves. It uses the standard library only.
package storehttp

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/idgen"
)

// Defaults of Options.
const (
	DefaultPingTimeout  = time.Second
	DefaultRefreshEvery = 5 * time.Second
	DefaultKeep         = 20
)

// Options tune New. The zero value is the default.
type Options struct {
	// PingTimeout bounds the Ping of readiness and of the status page
	// (default DefaultPingTimeout): a store that does not answer within it
	// is not ready.
	PingTimeout time.Duration
	// RefreshEvery is how often the status page reloads itself (default
	// DefaultRefreshEvery); negative: never.
	RefreshEvery time.Duration
	// Keep is how many of the last events and errors the page lists
	// (default DefaultKeep).
	Keep int
	// Now is the clock the page reads (nil: time.Now); for tests.
	Now func() time.Time
}

// Monitor watches one store and the generators added to it, and serves
// what it sees. It is safe for concurrent use.
type Monitor struct {
	opts  Options
	start time.Time

	mu       sync.Mutex
	st       *store.Store
	gens     []idgen.Generator
	conn     string // "", or the last connection state the driver reported
	server   string
	events   ring[EventEntry]
	errs     ring[ErrorEntry]
	errKinds map[string]int64
	locks    map[lockID]LockEntry // held
	lost     ring[LockEntry]      // lost while held
	id       string               // the store's identity, once read
}

type lockID struct {
	name  string
	fence int64
}

// New returns a Monitor with no store: give its Observer to the store as
// it is opened (store.WithObserver), then Attach the store.
func New(opts Options) *Monitor {
	if opts.PingTimeout <= 0 {
		opts.PingTimeout = DefaultPingTimeout
	}
	if opts.RefreshEvery == 0 {
		opts.RefreshEvery = DefaultRefreshEvery
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Monitor{opts: opts, errKinds: map[string]int64{}, locks: map[lockID]LockEntry{}}
	m.start = opts.Now()
	m.events.size, m.errs.size, m.lost.size = opts.Keep, opts.Keep, opts.Keep
	return m
}

// Attach sets the store the handlers ask and describe. Until then, the
// store is not ready.
func (m *Monitor) Attach(st *store.Store) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st = st
}

// Add shows g on the status page and makes readiness depend on it: a
// Segment whose key is sealed, or a Snowflake whose lease is lost, is not
// ready. Generators of other types are not shown. Remove it once closed.
func (m *Monitor) Add(g idgen.Generator) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gens = append(m.gens, g)
}

// Remove stops showing g.
func (m *Monitor) Remove(g idgen.Generator) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, h := range m.gens {
		if h == g {
			m.gens = append(m.gens[:i], m.gens[i+1:]...)
			return
		}
	}
}

// Observer returns the observer to give the store (store.WithObserver):
// through it the page sees the store's events, its locks and the errors of
// its calls. It keeps a bounded number of each.
func (m *Monitor) Observer() store.Observer {
	return store.Observer{End: m.op, Event: m.event}
}

func (m *Monitor) op(_ context.Context, e store.OpEnd) {
	if e.Err == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errKinds[e.Outcome]++
	m.errs.add(ErrorEntry{Time: m.opts.Now(), Op: e.Op, Key: e.Key, Kind: e.Outcome, Error: redact(e.Err)})
}

func (m *Monitor) event(e store.Event) {
	now := m.opts.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events.add(EventEntry{Time: now, Kind: string(e.Kind), Key: e.Key, Fence: e.Fence, Error: redact(e.Err)})
	switch e.Kind {
	case store.Connected, store.Disconnected, store.Expired:
		m.conn = string(e.Kind)
		if e.Server != "" {
			m.server = driver.Redact(e.Server)
		}
	case store.LockAcquired:
		m.locks[lockID{e.Key, e.Fence}] = LockEntry{Name: e.Key, Fence: e.Fence, Since: now}
	case store.LockReleased:
		delete(m.locks, lockID{e.Key, e.Fence})
	case store.LockLost:
		l, ok := m.locks[lockID{e.Key, e.Fence}]
		delete(m.locks, lockID{e.Key, e.Fence})
		if errors.Is(e.Err, store.ErrClosed) {
			return // ended by Close, not lost
		}
		if !ok {
			l = LockEntry{Name: e.Key, Fence: e.Fence}
		}
		l.Lost, l.LostAt, l.Cause = true, now, redact(e.Err)
		m.lost.add(l)
	}
}

// redact is the text of err with its secrets hidden; "" for nil.
func redact(err error) string {
	if err == nil {
		return ""
	}
	return driver.Redact(err.Error())
}

// ring keeps the last size values added.
type ring[T any] struct {
	size int
	all  []T
}

func (r *ring[T]) add(v T) {
	if len(r.all) == r.size {
		r.all = append(r.all[:0], r.all[1:]...)
	}
	r.all = append(r.all, v)
}

// newest returns the values, newest first.
func (r *ring[T]) newest() []T {
	out := make([]T, len(r.all))
	for i, v := range r.all {
		out[len(out)-1-i] = v
	}
	return out
}
