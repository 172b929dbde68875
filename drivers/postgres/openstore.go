package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// OpenStore opens a store on pool, a pool the caller owns: closing the store
// leaves it open, and the caller closes it after the store. opts may be nil
// (every default). storeOpts are the portable settings, as for store.Open.
func OpenStore(ctx context.Context, pool *pgxpool.Pool, opts *Options, storeOpts ...store.Option) (*store.Store, error) {
	fail := func(err error) error { return &store.Error{Op: "OpenStore", Key: "postgres", Err: err} }
	var cfg Options
	if opts != nil {
		cfg = *opts
	}
	switch {
	case pool == nil:
		return nil, fail(fmt.Errorf("the pool is nil: %w", driver.ErrInvalidArgument))
	case cfg.LockTimeout != 0 && cfg.LockTimeout < 100*time.Millisecond:
		return nil, fail(fmt.Errorf("LockTimeout %v: must be at least 100ms (or 0 for the default): %w", cfg.LockTimeout, driver.ErrInvalidArgument))
	}
	d, err := newDriver(ctx, pool, cfg, true)
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
