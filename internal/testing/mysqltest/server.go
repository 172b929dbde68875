package mysqltest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/cosid-go/store/internal/testing/srvproc"
)

// initTimeout bounds mariadb-install-db. Generous, for busy machines.
const initTimeout = 2 * time.Minute

// Server is one MariaDB data directory and, while it runs, its mariadbd.
type Server struct {
	name   string
	server string           // mariadbd
	extra  []string         // more mariadbd options (StartTLS)
	in     srvproc.Instance // its directory: data/, the socket, server.log
}

// Start starts a server of the test's own, killed and deleted when the test
// ends. It fails the test with a clear message when none can be started.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t)
}

// StartTLS is Start with a server that has the certificate and key in
// certFile and keyFile and accepts TLS connections only
// (require_secure_transport).
func StartTLS(t testing.TB, certFile, keyFile string) *Server {
	t.Helper()
	return StartWith(t, "--ssl-cert="+certFile, "--ssl-key="+keyFile, tlsOnly)
}

// tlsOnly makes a server refuse connections without TLS.
const tlsOnly = "--require-secure-transport=ON"

// StartWith is Start with more mariadbd options.
func StartWith(t testing.TB, options ...string) *Server {
	t.Helper()
	s, err := start(t.Name(), options...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.destroy)
	return s
}

func start(name string, options ...string) (*Server, error) {
	server, install, err := bins()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "cosid-mysqltest-")
	if err != nil {
		return nil, fmt.Errorf("mysqltest: %v", err)
	}
	s := &Server{name: name, server: server, extra: options}
	s.in = srvproc.Instance{Helper: "mysqltest", Dir: dir, Desc: s.String}
	if err := s.setup(install); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// osUser is the user the server runs as: the tests' own (mariadbd runs as
// root only when told to, with --user=root).
func osUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return strconv.Itoa(os.Geteuid())
}

// setup initialises the data directory and starts the server.
func (s *Server) setup(install string) error {
	// A tmpdir of its own: servers of other test binaries share /tmp, and
	// a bootstrap there once failed deleting a temporary table another
	// process had taken away.
	if err := os.Mkdir(s.tmpDir(), 0o700); err != nil {
		return fmt.Errorf("mysqltest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), initTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, install, "--no-defaults", "--datadir="+s.dataDir(), "--user="+osUser(),
		"--tmpdir="+s.tmpDir(), "--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve")
	cmd.SysProcAttr = procAttr()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("mysqltest: mariadb-install-db: %v\n%s", err, out)
	}
	return s.in.OnFreePort("Address already in use", s.launch)
}

func (s *Server) dataDir() string { return filepath.Join(s.in.Dir, "data") }
func (s *Server) tmpDir() string  { return filepath.Join(s.in.Dir, "tmp") }

// Socket is the path of the server's Unix socket.
func (s *Server) Socket() string { return filepath.Join(s.in.Dir, "mysqld.sock") }

// String describes the server for messages.
func (s *Server) String() string { return fmt.Sprintf("MariaDB server %s at %s", s.name, s.Addr()) }

// Addr returns "127.0.0.1:port".
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.in.Port) }

// DSN returns a data source name (go-sql-driver/mysql's form) of the
// test servers' root user at addr (a server's or a proxy's), on database
// db ("" for none).
func DSN(addr, db string) string {
	c := mysql.NewConfig()
	c.User, c.Net, c.Addr, c.DBName = "root", "tcp", addr, db
	c.Timeout = 10 * time.Second
	return c.FormatDSN()
}

// DSN is the DSN of the server's root user on database db; on a server
// of StartTLS, over TLS without verifying the server (the harness's own
// connections).
func (s *Server) DSN(db string) string {
	if slices.Contains(s.extra, tlsOnly) {
		return DSN(s.Addr(), db) + "&tls=skip-verify"
	}
	return DSN(s.Addr(), db)
}

// dbSeq numbers the databases of NewDatabase within the test binary.
var dbSeq atomic.Int64

// NewDatabase creates an empty database of the test's own on the server
// and returns its name; it is dropped when the test ends.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	if err := s.exec("CREATE DATABASE `" + name + "`"); err != nil {
		t.Fatalf("mysqltest: create database on %s: %v", s, err)
	}
	t.Cleanup(func() {
		if s.in.Running() {
			_ = s.exec("DROP DATABASE IF EXISTS `" + name + "`")
		}
	})
	return name
}

// Exec runs one statement as root, for a test's own setup.
func (s *Server) Exec(t testing.TB, query string) {
	t.Helper()
	if err := s.exec(query); err != nil {
		t.Fatalf("mysqltest: %s on %s: %v", query, s, err)
	}
}

func (s *Server) exec(query string) error {
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), srvproc.StartTimeout)
	defer cancel()
	_, err = db.ExecContext(ctx, query)
	return err
}

// launch starts mariadbd and waits until it answers a query. Commits are
// written to the OS at each commit (innodb_flush_log_at_trx_commit=2):
// they survive a kill of the server, not of the machine.
func (s *Server) launch() error {
	cmd := exec.Command(s.server, append([]string{"--no-defaults", "--datadir=" + s.dataDir(), "--user=" + osUser(),
		"--tmpdir=" + s.tmpDir(), "--bind-address=127.0.0.1", "--port=" + strconv.Itoa(s.in.Port), "--socket=" + s.Socket(),
		"--pid-file=" + filepath.Join(s.in.Dir, "mysqld.pid"), "--skip-log-bin", "--skip-name-resolve",
		"--innodb-flush-log-at-trx-commit=2", "--innodb-buffer-pool-size=64M", "--innodb-log-file-size=16M",
		"--performance-schema=OFF", "--max-connections=400"}, s.extra...)...)
	cmd.SysProcAttr = procAttr()
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		return err
	}
	defer db.Close()
	return s.in.Launch(cmd, func(ctx context.Context) error { return db.QueryRowContext(ctx, "SELECT 1").Scan(new(int)) })
}

// Kill kills mariadbd (SIGKILL: one process, every connection with it), as
// a crash would, and waits for it to be reaped.
func (s *Server) Kill() { s.in.Halt(syscall.SIGKILL) }

// Stop shuts the server down (SIGTERM: clients are disconnected) and waits.
func (s *Server) Stop() { s.in.Halt(syscall.SIGTERM) }

// Restart starts a stopped or killed server again on the same data and
// port, and waits until it answers (after crash recovery).
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if s.in.Running() {
		t.Fatalf("mysqltest: Restart of %s, which is running", s)
	}
	if err := s.launch(); err != nil {
		t.Fatal(err)
	}
}

// destroy kills the server and deletes its directory.
func (s *Server) destroy() { s.in.Destroy() }
