package srvproc

import (
	"context"
	"testing"
)

// Restarter is a TCK harness's restart (tck.Restarter) of a helper's
// server (pgtest.Server, mysqltest.Server): it stops the server and starts
// it again on the same data. The TCK runs its restart check alone, so no
// other check loses its connections to a shared server.
type Restarter struct {
	T      *testing.T
	Server interface {
		Stop()
		Restart(t testing.TB)
	}
}

// Restart stops the server and starts it again, failing T if it does not
// answer.
func (r Restarter) Restart(context.Context) error {
	r.Server.Stop()
	r.Server.Restart(r.T)
	return nil
}
