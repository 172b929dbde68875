package postgres

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/rawdriver"
	"github.com/cosid-go/store/tck"
)

// schemas counts the schemas handed out in this binary: one per check.
var schemas atomic.Int64

// freshSchema returns a schema name no other check or test binary uses.
func freshSchema(prefix string) string {
	return fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), schemas.Add(1))
}

// harness opens stores on one schema of the shared server and drops the
// schema when the check ends.
type harness struct {
	t      *testing.T
	srv    *pgtest.Server
	schema string
	extra  map[string]string
}

// Restart stops the server (fast shutdown) and starts it again on the same
// data (tck.Restarter). The TCK runs its restart check alone, so no other
// check loses its connections to the shared server.
func (h harness) Restart(context.Context) error {
	h.srv.Stop()
	h.srv.Restart(h.t)
	return nil
}

func (h harness) options() map[string]string {
	o := map[string]string{"connString": h.srv.ConnString(), "schema": h.schema, "poolSize": "4"}
	return rawdriver.With(o, h.extra)
}

func (h harness) NewStore(context.Context) (driver.Store, error) { return fromOptions(h.options()) }

func (h harness) Close() error {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, h.srv.ConnString())
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	// The schema, and the copies Snapshot made of it that no restore
	// dropped (tck_ops_test.go).
	snaps, err := names(ctx, c, `SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)`, h.schema+"_snap")
	if err != nil {
		return err
	}
	for _, s := range append(snaps, h.schema) {
		if _, err := c.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{s}.Sanitize()+" CASCADE"); err != nil {
			return err
		}
	}
	return nil
}

func TestTCK(t *testing.T) {
	srv := pgtest.Shared(t)
	tck.Run(t, tck.Suite{
		NewHarness: func(_ context.Context, t *testing.T) (tck.Harness, error) {
			return harness{t: t, srv: srv, schema: freshSchema("tck")}, nil
		},
		Ranges: true, Slots: true, Locks: true,
		Factory: fromOptions,
		Options: optionsSchema(t, srv),
		MalformedOptions: map[string]string{
			"poolSize": "-1", "connectTimeout": "soon", "lockTimeout": "5ms", "create": "maybe",
		},
		// connString may be empty (libpq's defaults and environment), so
		// no option is required.
		// Each history opens stores on a fresh schema: a few are enough
		// here, the memory driver's TCK runs many on the same model.
		Histories: 10,
	})
}

// optionsSchema is the option checks' Suite.Options: a schema of their
// own, dropped when TestTCK ends (Options/CreateFalse writes to it).
func optionsSchema(t *testing.T, srv *pgtest.Server) map[string]string {
	h := harness{t: t, srv: srv, schema: freshSchema("tckopt")}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("dropping schema %s: %v", h.schema, err)
		}
	})
	return h.options()
}
