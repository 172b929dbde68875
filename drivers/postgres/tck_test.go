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
	"github.com/cosid-go/store/internal/testing/srvproc"
	"github.com/cosid-go/store/tck"
)

// schemas counts the schemas handed out in this binary: one per check.
var schemas atomic.Int64

// freshSchema returns a schema name no other check or test binary uses.
func freshSchema(prefix string) string {
	return fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), schemas.Add(1))
}

// harness opens stores on one schema of the shared server and drops the
// schema when the check ends. It restarts the server (a fast shutdown)
// for the TCK's restart check (srvproc.Restarter).
type harness struct {
	srvproc.Restarter
	srv    *pgtest.Server
	schema string
	extra  map[string]string
}

// newHarness is a harness on a fresh schema of srv.
func newHarness(t *testing.T, srv *pgtest.Server, prefix string) harness {
	return harness{Restarter: srvproc.Restarter{T: t, Server: srv}, srv: srv, schema: freshSchema(prefix)}
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
			return newHarness(t, srv, "tck"), nil
		},
		Ranges: true, Slots: true, Locks: true,
		Factory: fromOptions,
		Options: optionsSchema(t, srv),
		// A schema never made: create=false must not make it.
		MissingOptions: func(t *testing.T) map[string]string { return newHarness(t, srv, "missing").options() },
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
	h := newHarness(t, srv, "tckopt")
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("dropping schema %s: %v", h.schema, err)
		}
	})
	return h.options()
}
