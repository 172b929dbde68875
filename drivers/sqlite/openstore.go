package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// Options configure a store opened with OpenStore: the path and busyTimeout
// options of the package documentation.
type Options struct {
	// Path is the database file, created if missing (required).
	Path string
	// BusyTimeout is how long a statement waits for another process's
	// write lock; zero means the default, 5s.
	BusyTimeout time.Duration
}

// OpenStore opens the store in the file opts.Path, without the registry.
// storeOpts are the portable settings, as for store.Open. The file is
// closed with the store.
func OpenStore(ctx context.Context, opts *Options, storeOpts ...store.Option) (*store.Store, error) {
	fail := func(err error) error { return &store.Error{Op: "OpenStore", Key: "sqlite", Err: err} }
	switch {
	case opts == nil || opts.Path == "":
		return nil, fail(fmt.Errorf("sqlite.Options.Path is required: %w", driver.ErrInvalidArgument))
	case opts.BusyTimeout < 0 || opts.BusyTimeout > maxBusyTimeout:
		return nil, fail(fmt.Errorf("sqlite.Options.BusyTimeout %v is outside [0, %v]: %w", opts.BusyTimeout, maxBusyTimeout, driver.ErrInvalidArgument))
	}
	busy := opts.BusyTimeout
	if busy == 0 {
		busy = defaultBusyTimeout
	}
	d, err := newDriver(ctx, opts.Path, busy, true)
	if err != nil {
		return nil, fail(err)
	}
	st, err := store.OpenDriver(d, storeOpts...)
	if err != nil {
		d.Close()
		return nil, err
	}
	return st, nil
}
