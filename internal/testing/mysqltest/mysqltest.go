// Package mysqltest starts real MariaDB servers for tests: each one its own
// data directory (mariadb-install-db) in a temporary directory, on a free
// 127.0.0.1 port with its own socket, never the system service. A test can
// kill a server (SIGKILL, as a crash of the process would) and start it
// again on the same data, and cut or freeze client connections with a
// proxy.
//
// It is a test helper: import it from _test.go files only. A package whose
// tests start servers calls Main from its TestMain, so that the shared
// server is stopped and a server still running after the tests fails the
// test binary and is killed. Every server also dies with the test binary
// (a parent-death signal), even when no cleanup runs.
//
// Environment:
//
//	COSID_MARIADB_BIN  the directory of mariadbd and mariadb-install-db;
//	                   by default found on PATH, /usr/sbin and /usr/bin,
//	                   where scripts/install-mariadb.sh installs them
package mysqltest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cosid-go/store/internal/testing/netproxy"
	"github.com/cosid-go/store/internal/testing/srvproc"
)

const (
	envBin      = "COSID_MARIADB_BIN"
	installHint = "run `bash scripts/install-mariadb.sh` (or `make mariadb`) at the module root"
)

// bins finds mariadbd and mariadb-install-db.
func bins() (server, install string, err error) {
	if d := os.Getenv(envBin); d != "" {
		server, install = filepath.Join(d, "mariadbd"), filepath.Join(d, "mariadb-install-db")
		for _, p := range []string{server, install} {
			if _, err := os.Stat(p); err != nil {
				return "", "", fmt.Errorf("mysqltest: %s=%s: %v", envBin, d, err)
			}
		}
		return server, install, nil
	}
	find := func(name string) string {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
		for _, d := range []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"} {
			if _, err := os.Stat(filepath.Join(d, name)); err == nil {
				return filepath.Join(d, name)
			}
		}
		return ""
	}
	server, install = find("mariadbd"), find("mariadb-install-db")
	if server == "" || install == "" {
		return "", "", errors.New("mysqltest: MariaDB is not installed (no mariadbd or mariadb-install-db); " + installHint)
	}
	return server, install, nil
}

// Proxy is a loopback TCP proxy that cuts or freezes client connections on
// purpose.
type Proxy = netproxy.Proxy

// NewProxy forwards a free 127.0.0.1 port to target until the test ends.
func NewProxy(t testing.TB, target string) *Proxy { return netproxy.New(t, target) }

// shared is the server of Shared, one per test binary.
var shared srvproc.Shared[*Server]

// Shared returns the test binary's shared server, starting it on first use.
// Tests keep apart on it by database (NewDatabase); it is stopped by Main.
// Tests that kill or restart a server start their own with Start.
func Shared(t testing.TB) *Server {
	t.Helper()
	return shared.Get(t, func() (*Server, error) { return start("shared") })
}

// Main runs the tests, stops the shared server, then kills any server still
// running, lists it and exits 1: no server may outlive the tests.
//
//	func TestMain(m *testing.M) { mysqltest.Main(m) }
func Main(m *testing.M) { os.Exit(Wrap(m).Run()) }

// Wrap returns m with the checks of Main added to its Run, for a TestMain
// that wraps it further.
func Wrap(m srvproc.Runner) srvproc.Runner {
	return srvproc.Wrap(m, "mysqltest", "MariaDB", func() { shared.Stop((*Server).destroy) })
}
