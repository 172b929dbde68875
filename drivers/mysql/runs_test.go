package mysql

import (
	"testing"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/mysqltest"
	"github.com/cosid-go/store/internal/testing/runs"
)

// TestRunsOfOneOwner: processes given the same owner and the same
// store.WithIncarnation label never issue the same Snowflake ID, at once,
// restarted while the old one runs, or restarted after a crash with the
// clock 2s behind (see package internal/testing/runs).
func TestRunsOfOneOwner(t *testing.T) {
	runs.Child()
	srv := mysqltest.Shared(t)
	runs.Run(t, "TestRunsOfOneOwner", "mysql", map[string]string{"dsn": srv.DSN(""), "database": srv.NewDatabase(t)})
}

// TestLayoutKept: a namespace keeps the layout of its first Snowflake
// generator; another layout is refused and issues no ID again (see
// runs.LayoutKept).
func TestLayoutKept(t *testing.T) {
	srv := mysqltest.Shared(t)
	database := srv.NewDatabase(t)
	runs.LayoutKept(t, func(t *testing.T) *store.Store { return openStore(t, srv.Addr(), database, nil) })
}
