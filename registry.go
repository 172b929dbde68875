package store

import (
	"fmt"
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
// (timeout, owner, incarnation).
func Open(driverName string, options map[string]string, opts ...Option) (*Store, error) {
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
	s.drv = d
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
	s.drv = d
	return s, nil
}
