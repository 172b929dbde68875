package store

import (
	"context"
	"fmt"
	"path"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/cosid-go/store/driver"
)

var (
	driversMu sync.RWMutex
	drivers   = map[string]driver.Factory{}
)

// Register makes a driver available under name. Drivers call it from
// init(). It panics if factory is nil or name is already registered, like
// sql.Register: two drivers under one name is a build mistake.
func Register(name string, factory driver.Factory) {
	driversMu.Lock()
	defer driversMu.Unlock()
	if factory == nil {
		panic("store: Register factory is nil")
	}
	if _, dup := drivers[name]; dup {
		panic("store: Register called twice for driver " + name)
	}
	drivers[name] = factory
}

// Drivers returns the names of the registered drivers, sorted.
func Drivers() []string {
	driversMu.RLock()
	defer driversMu.RUnlock()
	names := make([]string, 0, len(drivers))
	for name := range drivers {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Open opens a store with the registered driver driverName. options are the
// driver's own (unknown keys are rejected); opts set the portable settings
// (timeout, owner, incarnation, logger, observers). It is OpenContext without
// a bound of its own: a driver that connects waits as its options say.
func Open(driverName string, options map[string]string, opts ...Option) (*Store, error) {
	return OpenContext(context.Background(), driverName, options, opts...)
}

// OpenContext is Open bounded by ctx: a driver that connects
// (driver.Connector) gives up when ctx ends, with an error that wraps
// ctx.Err() and, when no server answered, ErrUnavailable.
func OpenContext(ctx context.Context, driverName string, options map[string]string, opts ...Option) (*Store, error) {
	driversMu.RLock()
	factory, ok := drivers[driverName]
	driversMu.RUnlock()
	if !ok {
		return nil, &Error{Op: "Open", Key: driverName, Err: invalidValue(driverName,
			"unknown driver %q (forgotten import? registered: %s)", driverName, strings.Join(Drivers(), ", "))}
	}
	s, err := newStore(opts)
	if err != nil {
		return nil, err
	}
	d, err := factory(options)
	if err != nil {
		return nil, &Error{Op: "Open", Key: driverName, Err: err}
	}
	s.driverName = driverName
	s.attach(d)
	if c, ok := d.(driver.Connector); ok {
		if err := c.Connect(ctx); err != nil {
			d.Close()
			return nil, wrap(ctx, "Open", driverName, err)
		}
	}
	return s, nil
}

// OpenDriver wraps an already opened driver store, bypassing the registry
// (like sql.OpenDB). Closing the returned Store closes d; if OpenDriver
// fails, d is left open for the caller to close.
func OpenDriver(d driver.Store, opts ...Option) (*Store, error) {
	if d == nil {
		return nil, fmt.Errorf("store: OpenDriver: %w", invalid("the driver store is nil"))
	}
	s, err := newStore(opts)
	if err != nil {
		return nil, err
	}
	s.attach(d)
	return s, nil
}

// attach makes d the store's driver and, if d reports events, routes them
// to the store's logger and observers.
func (s *Store) attach(d driver.Store) {
	s.drv = d
	if s.driverName == "" {
		s.driverName = packageName(d)
	}
	if n, ok := d.(driver.Notifier); ok && s.observed() {
		n.Notify(func(e driver.Event) { s.Report(eventOf(e)) })
	}
}

func eventOf(e driver.Event) Event {
	return Event{
		Kind:      EventKind(e.Kind),
		Key:       e.Key,
		Server:    e.Server,
		SessionID: e.SessionID,
		Timeout:   e.Timeout,
		Attempt:   e.Attempt,
		Value:     e.Value,
		Count:     e.Count,
		Err:       e.Err,
	}
}

// packageName names a driver opened without the registry by its package:
// "sqlite" for github.com/cosid-go/store/drivers/sqlite.
func packageName(d driver.Store) string {
	t := reflect.TypeOf(d)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.PkgPath() == "" {
		return t.String()
	}
	return path.Base(t.PkgPath())
}
