package etcd

import (
	"strings"
	"testing"

	"github.com/cosid-go/store/internal/testing/runs"
)

// TestRunsOfOneOwner: processes given the same owner and the same
// store.WithIncarnation label never issue the same Snowflake ID, at once,
// restarted while the old one runs, or restarted after a crash with the
// clock 2s behind (see package internal/testing/runs).
func TestRunsOfOneOwner(t *testing.T) {
	runs.Child()
	runs.Run(t, "TestRunsOfOneOwner", "etcd", map[string]string{
		"endpoints": strings.Join(sharedServer(t).Endpoints(), ","),
		"prefix":    freshPrefix("runs"),
	})
}
