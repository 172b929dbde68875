package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/internal/testing/srvproc"
)

// Bounds, not sleeps: readiness is polled. Generous, for busy machines.
const (
	initTimeout  = 2 * time.Minute
	startTimeout = time.Minute
	stopTimeout  = 20 * time.Second
	pollInterval = 50 * time.Millisecond
)

// Server is one PostgreSQL cluster and, while it runs, its postmaster.
type Server struct {
	name string
	bin  string
	dir  string // owned by the server's user: data/, the socket, server.log
	port int
	// maxConns is the server's max_connections (defaultMaxConns unless
	// StartSized set it).
	maxConns int

	mu   sync.Mutex
	proc *srvproc.Process // nil when stopped
}

// launchMarker begins the log of each launch, so that the checks of a
// failed launch look at the latest one only.
const launchMarker = "=== pgtest: launch "

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
	s := &Server{name: name, bin: bin, dir: dir, maxConns: maxConns}
	if err := s.setup(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// setup makes the cluster and starts it, retrying once on another port if
// someone took the free port before the server bound it.
func (s *Server) setup() error {
	if err := chownToServerUser(s.dir); err != nil {
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
	for attempt := 1; ; attempt++ {
		var err error
		if s.port, err = freePort(); err != nil {
			return err
		}
		err = s.launch()
		if err == nil {
			return nil
		}
		if attempt == 1 && strings.Contains(s.logTail(), "could not bind") {
			continue
		}
		return err
	}
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }
func (s *Server) logPath() string { return filepath.Join(s.dir, "server.log") }

// String describes the server for messages.
func (s *Server) String() string { return fmt.Sprintf("PostgreSQL server %s at %s", s.name, s.Addr()) }

// Addr returns "127.0.0.1:port".
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

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
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.dataDir(), "-p", strconv.Itoa(s.port),
		"-k", s.dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
		"-c", "full_page_writes=off", "-c", "max_connections="+strconv.Itoa(s.maxConns), "-c", "shared_buffers=32MB",
		"-c", "cluster_name=cosid-pgtest-"+strconv.Itoa(os.Getpid()))
	cmd.SysProcAttr = procAttr()
	p, err := srvproc.Start(cmd, srvproc.Spec{Helper: "pgtest", Log: s.logPath(), Marker: launchMarker,
		Desc: func(int) string { return s.String() }, Kill: killAll})
	if err != nil {
		return fmt.Errorf("pgtest: start postgres: %v", err)
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	if err := s.waitReady(p); err != nil {
		s.halt(syscall.SIGKILL)
		return fmt.Errorf("pgtest: %s did not start: %v\nlog tail:\n%s", s, err, s.logTail())
	}
	return nil
}

// waitReady polls with a query until the server answers or p exits.
func (s *Server) waitReady(p *srvproc.Process) error {
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, s.ConnString())
		if err == nil {
			err = conn.QueryRow(ctx, "SELECT 1").Scan(new(int))
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-p.Done():
			return errors.New("the postmaster exited")
		case <-time.After(pollInterval):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer within %v: %v", startTimeout, err)
		}
	}
}

// Kill kills the postmaster and every backend at once (SIGKILL), as a
// crash of the machine would, and waits for the postmaster to be reaped.
func (s *Server) Kill() { s.halt(syscall.SIGKILL) }

// Stop shuts the server down (fast shutdown: clients are disconnected) and
// waits for it.
func (s *Server) Stop() { s.halt(syscall.SIGINT) }

// Restart starts a stopped or killed server again on the same data and
// port, and waits until it answers.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	running := s.proc != nil
	s.mu.Unlock()
	if running {
		t.Fatalf("pgtest: Restart of %s, which is running", s)
	}
	// Killed backends may hold the shared memory for a moment longer.
	deadline := time.Now().Add(startTimeout)
	for {
		err := s.launch()
		if err == nil {
			return
		}
		if !strings.Contains(s.logTail(), "is still in use") || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(pollInterval)
	}
}

// halt signals the postmaster (SIGKILL: every backend too) and waits; a
// server that ignores sig is killed after stopTimeout.
func (s *Server) halt(sig syscall.Signal) {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return
	}
	p.Halt(sig, stopTimeout, nil)
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
func (s *Server) destroy() {
	s.halt(syscall.SIGKILL)
	os.RemoveAll(s.dir)
}

// logTail returns the last lines of the server's log since its latest
// launch.
func (s *Server) logTail() string {
	return srvproc.Tail(srvproc.LastRun(s.logPath(), launchMarker), 30)
}
