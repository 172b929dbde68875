package pgtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/internal/testing/srvproc"
)

// initTimeout bounds initdb. Generous, for busy machines.
const initTimeout = 2 * time.Minute

// Server is one PostgreSQL cluster and, while it runs, its postmaster.
type Server struct {
	name string
	bin  string
	// maxConns is the server's max_connections (defaultMaxConns unless
	// StartSized set it).
	maxConns int
	in       srvproc.Instance // its directory, owned by the server's user: data/, the socket, server.log
}

// Start starts a server of the test's own, killed and deleted when the test
// ends. It fails the test with a clear message when none can be started.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartSized(t, defaultMaxConns)
}

// defaultMaxConns is the max_connections of a test server: room for the
// tests of a package running in parallel.
const defaultMaxConns = 400

// StartSized is Start with a server that admits maxConns connections (a
// benchmark's fleet of stores, one connection each).
func StartSized(t testing.TB, maxConns int) *Server {
	t.Helper()
	s, err := start(t.Name(), maxConns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.destroy)
	return s
}

func start(name string, maxConns int) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "cosid-pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %v", err)
	}
	s := &Server{name: name, bin: bin, maxConns: maxConns}
	s.in = srvproc.Instance{Helper: "pgtest", Dir: dir, Desc: s.String, Kill: killAll}
	if err := s.setup(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// setup makes the cluster and starts it.
func (s *Server) setup() error {
	if err := chownToServerUser(s.in.Dir); err != nil {
		return fmt.Errorf("pgtest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), initTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, "initdb"), "-D", s.dataDir(),
		"-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C")
	cmd.SysProcAttr = procAttr()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	return s.in.OnFreePort("could not bind", s.launch)
}

func (s *Server) dataDir() string { return filepath.Join(s.in.Dir, "data") }

// String describes the server for messages.
func (s *Server) String() string { return fmt.Sprintf("PostgreSQL server %s at %s", s.name, s.Addr()) }

// Addr returns "127.0.0.1:port".
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.in.Port) }

// ConnString returns a connection string for the superuser on the
// postgres database, over TCP.
func (s *Server) ConnString() string { return ConnStringAt(s.Addr()) }

// ConnStringAt returns the connection string of the test servers' superuser
// on the postgres database at addr (a server's or a proxy's).
func ConnStringAt(addr string) string {
	host, port, _ := strings.Cut(addr, ":")
	return fmt.Sprintf("host=%s port=%s user=postgres dbname=postgres sslmode=disable connect_timeout=10", host, port)
}

// launch starts the postmaster and waits until it answers a query.
func (s *Server) launch() error {
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.dataDir(), "-p", strconv.Itoa(s.in.Port),
		"-k", s.in.Dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
		"-c", "full_page_writes=off", "-c", "max_connections="+strconv.Itoa(s.maxConns), "-c", "shared_buffers=32MB",
		"-c", "cluster_name=cosid-pgtest-"+strconv.Itoa(os.Getpid()))
	cmd.SysProcAttr = procAttr()
	return s.in.Launch(cmd, func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, s.ConnString())
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		return conn.QueryRow(ctx, "SELECT 1").Scan(new(int))
	})
}

// Kill kills the postmaster and every backend at once (SIGKILL), as a
// crash of the machine would, and waits for the postmaster to be reaped.
func (s *Server) Kill() { s.in.Halt(syscall.SIGKILL) }

// Stop shuts the server down (fast shutdown: clients are disconnected) and
// waits for it.
func (s *Server) Stop() { s.in.Halt(syscall.SIGINT) }

// Restart starts a stopped or killed server again on the same data and
// port, and waits until it answers.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if s.in.Running() {
		t.Fatalf("pgtest: Restart of %s, which is running", s)
	}
	// Killed backends may hold the shared memory for a moment longer.
	deadline := time.Now().Add(srvproc.StartTimeout)
	for {
		err := s.launch()
		if err == nil {
			return
		}
		if !strings.Contains(s.in.LogTail(), "is still in use") || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(srvproc.PollInterval)
	}
}

// killAll kills the postmaster and every backend at once. Each backend is
// a process group of its own, so the postmaster is stopped first (it forks
// no more), its children are listed and killed, then it is.
func killAll(pid int) {
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	for _, c := range children(pid) {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// destroy kills the server and deletes its directory.
func (s *Server) destroy() { s.in.Destroy() }
