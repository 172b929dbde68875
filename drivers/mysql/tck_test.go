package mysql

import (
	"context"
	"testing"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/mysqltest"
	"github.com/cosid-go/store/internal/testing/rawdriver"
	"github.com/cosid-go/store/tck"
)

// harness opens stores on one database of a server; the database is
// dropped when the check ends (mysqltest.NewDatabase).
type harness struct {
	t        *testing.T
	srv      *mysqltest.Server
	database string
	extra    map[string]string
}

// Restart stops the server and starts it again on the same data
// (tck.Restarter). The TCK runs its restart check alone, so no other
// check loses its connections to the shared server.
func (h harness) Restart(context.Context) error {
	h.srv.Stop()
	h.srv.Restart(h.t)
	return nil
}

func (h harness) options() map[string]string {
	o := map[string]string{"dsn": h.srv.DSN(""), "database": h.database, "poolSize": "4"}
	return rawdriver.With(o, h.extra)
}

func (h harness) NewStore(context.Context) (driver.Store, error) { return fromOptions(h.options()) }

func (h harness) Close() error { return nil }

func TestTCK(t *testing.T) {
	srv := mysqltest.Shared(t)
	tck.Run(t, tck.Suite{
		NewHarness: func(_ context.Context, t *testing.T) (tck.Harness, error) {
			return harness{t: t, srv: srv, database: srv.NewDatabase(t)}, nil
		},
		Ranges: true, Slots: true, Locks: true,
		Factory: fromOptions,
		Options: harness{t: t, srv: srv, database: srv.NewDatabase(t)}.options(),
		MalformedOptions: map[string]string{
			"poolSize": "-1", "connectTimeout": "soon", "lockTimeout": "5ms", "create": "maybe",
			"tls": "maybe", "port": "70000", "database": "a;b",
		},
		Histories: 10,
	})
}
