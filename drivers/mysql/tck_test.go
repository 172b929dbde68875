package mysql

import (
	"context"
	"testing"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/mysqltest"
	"github.com/cosid-go/store/internal/testing/rawdriver"
	"github.com/cosid-go/store/internal/testing/srvproc"
	"github.com/cosid-go/store/tck"
)

// harness opens stores on one database of a server; the database is
// dropped when the check ends (mysqltest.NewDatabase). It restarts the
// server for the TCK's restart check (srvproc.Restarter).
type harness struct {
	srvproc.Restarter
	srv      *mysqltest.Server
	database string
	extra    map[string]string
}

// newHarness is a harness on a fresh database of srv.
func newHarness(t *testing.T, srv *mysqltest.Server) harness {
	return harness{Restarter: srvproc.Restarter{T: t, Server: srv}, srv: srv, database: srv.NewDatabase(t)}
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
			return newHarness(t, srv), nil
		},
		Ranges: true, Slots: true, Locks: true,
		Factory: fromOptions,
		Options: newHarness(t, srv).options(),
		// An empty database: no store's tables, which create=false must not make.
		MissingOptions: func(t *testing.T) map[string]string { return newHarness(t, srv).options() },
		MalformedOptions: map[string]string{
			"poolSize": "-1", "connectTimeout": "soon", "lockTimeout": "5ms", "create": "maybe",
			"tls": "maybe", "port": "70000", "database": "a;b",
		},
		Histories: 10,
	})
}
