// Package pgtest starts real PostgreSQL servers for tests: each one its own
// cluster (initdb) in a temporary directory, on a free 127.0.0.1 port with
// its own socket directory, fsync off. Run as root, the server runs as the
// `postgres` user, because it refuses to run as root. A test can kill a
// server (the postmaster and every backend at once, as a crash would) and start it again on
// the same data, and cut or freeze client connections with a proxy.
//
// It is a test helper: import it from _test.go files only. A package whose
// tests start servers calls Main from its TestMain, so that the shared
// server is stopped and a server still running after the tests fails the
// test binary and is killed. Every server also dies with the test binary
// (a parent-death signal), even when no cleanup runs.
//
// Environment:
//
//	COSID_PG_BIN  the directory of initdb and postgres; by default the
//	              newest /usr/lib/postgresql/*/bin, which
//	              scripts/install-postgres.sh installs
package pgtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/cosid-go/store/internal/testing/netproxy"
	"github.com/cosid-go/store/internal/testing/srvproc"
)

const (
	envBin      = "COSID_PG_BIN"
	installHint = "run `bash scripts/install-postgres.sh` at the module root"
)

// BinDir returns the directory of the server's binaries and client tools
// (pg_dump, pg_restore, psql), for tests that run them as an operator would.
func BinDir() (string, error) { return binDir() }

// binDir finds the server's binaries.
func binDir() (string, error) {
	if d := os.Getenv(envBin); d != "" {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			return "", fmt.Errorf("pgtest: %s=%s has no initdb: %v", envBin, d, err)
		}
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionLess(dirs[i], dirs[j]) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	return "", errors.New("pgtest: PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb); " + installHint)
}

// versionLess orders /usr/lib/postgresql/N/bin by N as a number.
func versionLess(a, b string) bool {
	va, vb := filepath.Base(filepath.Dir(a)), filepath.Base(filepath.Dir(b))
	if len(va) != len(vb) {
		return len(va) < len(vb)
	}
	return va < vb
}

// Proxy is a loopback TCP proxy that cuts or freezes client connections on
// purpose.
type Proxy = netproxy.Proxy

// NewProxy forwards a free 127.0.0.1 port to target until the test ends.
func NewProxy(t testing.TB, target string) *Proxy { return netproxy.New(t, target) }

// shared is the server of Shared, one per test binary.
var shared srvproc.Shared[*Server]

// Shared returns the test binary's shared server, starting it on first use.
// Tests keep apart on it by schema or database; it is stopped by Main.
// Tests that kill or restart a server start their own with Start.
func Shared(t testing.TB) *Server {
	t.Helper()
	return shared.Get(t, func() (*Server, error) { return start("shared", defaultMaxConns) })
}

// Main runs the tests, stops the shared server, then kills any server still
// running, lists it and exits 1: no server may outlive the tests.
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) { os.Exit(Wrap(m).Run()) }

// Wrap returns m with the checks of Main added to its Run, for a TestMain
// that wraps it further (goleak.VerifyTestMain(pgtest.Wrap(m))) or wraps
// another helper's (pgtest.Wrap(zktest.Wrap(m))).
func Wrap(m srvproc.Runner) srvproc.Runner {
	return srvproc.Wrap(m, "pgtest", "PostgreSQL", func() { shared.Stop((*Server).destroy) })
}
