package etcdtest

import (
	"os"
	"testing"

	"github.com/cosid-go/store/internal/testing/srvproc"
)

// No member may outlive the tests.
func TestMain(m *testing.M) {
	os.Exit(srvproc.Report("etcdtest", "etcd", m.Run(), srvproc.Reap("etcdtest")))
}
