package zktest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/internal/testing/poll"
)

// The release each installed version must report through srvr.
var wantRelease = map[string]string{"3.8": "3.8.0", "3.9": "3.9.3"}

// childEnv makes the test binary act as the child of
// TestJVMDiesWithTestBinary.
const childEnv = "ZKTEST_CHILD_DIES"

// TestMain also proves the point of Main for this package's own tests: any
// server left running makes the binary fail.
func TestMain(m *testing.M) { Main(m) }

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// connect opens a zk session; the library's logging is dropped because it
// may log after the test has ended.
func connect(t *testing.T, servers string, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	conn, events, err := zk.Connect(strings.Split(servers, ","), timeout, zk.WithLogger(nopLogger{}),
		zk.WithDialer(BoundedHandshake))
	if err != nil {
		t.Fatalf("zk.Connect(%s): %v", servers, err)
	}
	t.Cleanup(conn.Close)
	return conn, events
}

// waitState reads session events until one reports want.
func waitState(t *testing.T, events <-chan zk.Event, want zk.State, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev := <-events:
			if ev.Type == zk.EventSession && ev.State == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %v session event within %v", want, timeout)
		}
	}
}

func getData(conn *zk.Conn, path, want string) error {
	got, _, err := conn.Get(path)
	if err != nil {
		return err
	}
	if string(got) != want {
		return fmt.Errorf("%s = %q, want %q", path, got, want)
	}
	return nil
}

func TestVersions(t *testing.T) {
	t.Setenv(envVersions, "")
	if got := Versions(); !reflect.DeepEqual(got, []string{"3.8", "3.9"}) {
		t.Errorf("default Versions() = %q", got)
	}
	t.Setenv(envVersions, " 3.9 ,, 3.8")
	if got := Versions(); !reflect.DeepEqual(got, []string{"3.9", "3.8"}) {
		t.Errorf("Versions() = %q", got)
	}
}

func TestServer(t *testing.T) {
	for _, v := range Versions() {
		t.Run(v, func(t *testing.T) {
			start := time.Now()
			s := StartServer(t, v)
			t.Logf("%s serves after %v", s, time.Since(start).Round(time.Millisecond))
			if got, err := ServerVersion(s.Addr()); err != nil || got != wantRelease[v] {
				t.Fatalf("srvr version = %q, %v; want %q", got, err, wantRelease[v])
			}
			if m := s.Mode(); m != "standalone" {
				t.Errorf("Mode() = %q, want standalone", m)
			}

			// 30s is above ZooKeeper's default cap of 20 ticks (4s here): the
			// config must raise the cap so tests get the session they ask for.
			// It also outlasts a slow restart below on a loaded machine.
			conn, events := connect(t, s.Addr(), 30*time.Second)
			waitState(t, events, zk.StateHasSession, 30*time.Second)
			if cons, err := FourLetterWord(s.Addr(), "cons"); err != nil || !strings.Contains(cons, "to=30000") {
				t.Errorf("session timeout not negotiated as asked: cons = %q, %v", cons, err)
			}
			if _, err := conn.Create("/zktest", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("create: %v", err)
			}
			if err := getData(conn, "/zktest", "hello"); err != nil {
				t.Fatal(err)
			}

			// Each way down and back up keeps the data and the address.
			for _, down := range []func(){s.Stop, s.Kill} {
				down()
				if s.Running() || s.Mode() != "" {
					t.Fatalf("%s still running after Stop/Kill", s)
				}
				if _, err := ServerVersion(s.Addr()); err == nil {
					t.Fatalf("%s still answers srvr", s)
				}
				start := time.Now()
				s.Start()
				t.Logf("%s serves again after %v", s, time.Since(start).Round(time.Millisecond))
				poll.Succeeds(t, 60*time.Second, "read after restart", func() error {
					return getData(conn, "/zktest", "hello")
				})
			}

			// A lower maxSessionTimeout from the next start on, the data
			// kept: the client comes back with the timeout negotiated again.
			s.Stop()
			s.SetSessionTimeouts(0, 4*time.Second)
			s.Start()
			poll.Succeeds(t, 60*time.Second, "the session back at 4s", func() error {
				cons, err := FourLetterWord(s.Addr(), "cons")
				if err != nil || !strings.Contains(cons, "to=4000") {
					return fmt.Errorf("cons = %q, %v", cons, err)
				}
				return getData(conn, "/zktest", "hello")
			})
		})
	}
}

func TestEnsemble(t *testing.T) {
	for _, v := range Versions() {
		t.Run(v, func(t *testing.T) {
			start := time.Now()
			e := StartEnsemble(t, v, 3)
			t.Logf("ensemble %s serves after %v", e.ConnectString(), time.Since(start).Round(time.Millisecond))
			for _, m := range e.Members {
				if got, err := ServerVersion(m.Addr()); err != nil || got != wantRelease[v] {
					t.Fatalf("%s: srvr version = %q, %v; want %q", m, got, err, wantRelease[v])
				}
			}
			old := e.Leader()
			if old < 0 {
				t.Fatal("no leader after StartEnsemble")
			}

			conn, _ := connect(t, e.ConnectString(), 30*time.Second)
			if _, err := conn.Create("/ens", []byte("one"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("create: %v", err)
			}

			e.Members[old].Kill()
			start = time.Now()
			e.WaitQuorum(t)
			now := e.Leader()
			t.Logf("leader %d killed; member %d leads after %v", old, now, time.Since(start).Round(time.Millisecond))
			if now < 0 || now == old {
				t.Fatalf("Leader() = %d after killing leader %d", now, old)
			}
			poll.Succeeds(t, 60*time.Second, "write after failover", func() error {
				_, err := conn.Set("/ens", []byte("two"), -1)
				return err
			})

			start = time.Now()
			e.Members[old].Start()
			t.Logf("old leader rejoins after %v as %s", time.Since(start).Round(time.Millisecond), e.Members[old].Mode())
			if m := e.Members[old].Mode(); m != "follower" {
				t.Errorf("restarted member: Mode() = %q, want follower", m)
			}
			// Read through the restarted member alone: it has the write it missed.
			direct, _ := connect(t, e.Members[old].Addr(), 30*time.Second)
			poll.Succeeds(t, 60*time.Second, "read on the restarted member", func() error {
				if _, err := direct.Sync("/ens"); err != nil {
					return err
				}
				return getData(direct, "/ens", "two")
			})
			poll.Succeeds(t, 60*time.Second, "write through the ensemble", func() error {
				_, err := conn.Set("/ens", []byte("three"), -1)
				return err
			})

			// A whole-ensemble restart: no member serves alone, so start them
			// all without waiting, then wait for the quorum.
			for _, m := range e.Members {
				m.Kill()
			}
			if l := e.Leader(); l != -1 {
				t.Fatalf("Leader() = %d with every member killed", l)
			}
			start = time.Now()
			for _, m := range e.Members {
				m.StartNoWait()
			}
			e.WaitQuorum(t)
			t.Logf("whole ensemble serves again after %v", time.Since(start).Round(time.Millisecond))
			poll.Succeeds(t, 60*time.Second, "read after the ensemble restart", func() error {
				return getData(conn, "/ens", "three")
			})
		})
	}
}

func TestProxy(t *testing.T) {
	s := StartServer(t, Versions()[0])
	p := NewProxy(t, s.Addr())
	// A session that outlasts a slow reconnection after the cut.
	conn, events := connect(t, p.Addr(), 30*time.Second)
	waitState(t, events, zk.StateHasSession, 30*time.Second)
	session := conn.SessionID()
	if _, err := conn.Create("/proxy", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create: %v", err)
	}
	if n := p.Conns(); n != 1 {
		t.Fatalf("Conns() = %d, want 1", n)
	}

	p.Cut()
	waitState(t, events, zk.StateDisconnected, 30*time.Second)
	// A new connection is closed at once while cut, and not counted.
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read through a cut proxy: %d, %v; want the connection closed", n, err)
	}
	c.Close()
	if n := p.Conns(); n != 1 {
		t.Fatalf("Conns() while cut = %d, want 1", n)
	}

	p.Restore()
	waitState(t, events, zk.StateHasSession, 30*time.Second)
	if conn.SessionID() != session {
		t.Errorf("session changed across the cut: %x -> %x", session, conn.SessionID())
	}
	if err := getData(conn, "/proxy", "x"); err != nil {
		t.Fatal(err)
	}
	if n := p.Conns(); n < 2 {
		t.Fatalf("Conns() after Restore = %d, want >= 2", n)
	}
}

// fatalTB records a Fatal instead of failing the real test, to check the
// messages of the failure paths.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatalOf runs fn like a test body and returns its Fatal message, "" if none.
func fatalOf(t *testing.T, fn func(tb testing.TB)) string {
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f.msg
}

func wantIn(t *testing.T, msg string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("message lacks %q:\n%s", p, msg)
		}
	}
}

func TestStartFailureMessages(t *testing.T) {
	t.Run("not installed", func(t *testing.T) {
		t.Setenv(classpathVar("3.8"), "/nonexistent/zookeeper.jar")
		msg := fatalOf(t, func(tb testing.TB) { StartServer(tb, "3.8") })
		wantIn(t, msg, "ZK38_CLASSPATH", "/nonexistent/zookeeper.jar", "install-zookeeper.sh")
	})
	t.Run("jvm exits", func(t *testing.T) {
		jar := filepath.Join(t.TempDir(), "empty.jar")
		if err := os.WriteFile(jar, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv(classpathVar("3.8"), jar)
		msg := fatalOf(t, func(tb testing.TB) { StartServer(tb, "3.8") })
		wantIn(t, msg, "did not start", "the JVM exited", "command: java -Xmx128m", mainClass,
			"last lines of", "Could not find or load main class")
	})
	t.Run("bad version", func(t *testing.T) {
		msg := fatalOf(t, func(tb testing.TB) { StartServer(tb, "latest") })
		wantIn(t, msg, `bad ZooKeeper version "latest"`)
	})
}

func TestExistingServer(t *testing.T) {
	v := Versions()[0]
	srv := StartServer(t, v)
	t.Setenv(envServers, srv.Addr())
	var s *Server
	if msg := fatalOf(t, func(tb testing.TB) { s = StartServer(tb, v) }); msg != "" {
		t.Fatalf("StartServer with %s set: %s", envServers, msg)
	}
	if s.Addr() != srv.Addr() {
		t.Fatalf("Addr() = %q, want %q", s.Addr(), srv.Addr())
	}
	if got, err := ServerVersion(s.Addr()); err != nil || got != wantRelease[v] {
		t.Fatalf("srvr version = %q, %v", got, err)
	}
	for name, f := range map[string]func(){"Stop": s.Stop, "Kill": s.Kill, "Start": s.Start} {
		msg := fatalOf(t, func(tb testing.TB) { s.t = tb; f() })
		wantIn(t, msg, "Server."+name+" needs a server started by the tests", envServers)
	}
	msg := fatalOf(t, func(tb testing.TB) { StartEnsemble(tb, v, 3) })
	wantIn(t, msg, "StartEnsemble needs servers started by the tests", envServers)
	if !srv.Running() {
		t.Fatal("the real server was stopped through the existing-server handle")
	}
}

// startLeaking starts a standalone server like StartServer but registers no
// cleanup, as a buggy helper would.
func startLeaking(t *testing.T) *Server {
	t.Helper()
	v := Versions()[0]
	cp, err := classpath(v)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, version: v, cp: cp, dir: t.TempDir()}
	if s.clientPort, err = freePort(); err != nil {
		t.Fatal(err)
	}
	if err := s.writeConfig(nil); err != nil {
		t.Fatal(err)
	}
	if err := s.launch(); err != nil {
		t.Fatal(err)
	}
	if err := s.waitServing(startTimeout); err != nil {
		s.halt(syscall.SIGKILL)
		t.Fatal(s.failure("did not start", err))
	}
	return s
}

// TestReap checks the safety net of Main: a server whose cleanup never runs
// is found, killed and reported.
func TestReap(t *testing.T) {
	s := startLeaking(t)
	t.Cleanup(func() { s.halt(syscall.SIGKILL) }) // only if the checks below fail early
	pid := s.proc.Pid()
	if pids := markedProcesses(os.Getpid()); runtime.GOOS == "linux" && !slices.Contains(pids, pid) {
		t.Fatalf("markedProcesses() = %v, want it to contain %d", pids, pid)
	}
	left := reap()
	if len(left) != 1 || !strings.Contains(left[0], fmt.Sprintf("pid %d", pid)) {
		t.Fatalf("reap() = %q, want the one server, pid %d", left, pid)
	}
	if s.Running() {
		t.Fatal("server still running after reap")
	}
	if pids := markedProcesses(os.Getpid()); len(pids) != 0 {
		t.Fatalf("JVMs left after reap: %v", pids)
	}
}

// runChild runs this test binary's test name in a child process with
// childEnv=mode and returns its exit code and output.
func runChild(t *testing.T, name, mode string) (int, string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("child %s: %v", name, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), cmd.Process.Pid
}

// childAddr returns the ADDR= line a child printed.
func childAddr(t *testing.T, out string) string {
	t.Helper()
	for sc := bufio.NewScanner(strings.NewReader(out)); sc.Scan(); {
		if a, ok := strings.CutPrefix(sc.Text(), "ADDR="); ok {
			return a
		}
	}
	t.Fatalf("child printed no ADDR=; output:\n%s", out)
	return ""
}

// waitGone waits until no JVM of the test binary pid runs and addr is dead.
func waitGone(t *testing.T, pid int, addr string) {
	t.Helper()
	poll.Succeeds(t, 30*time.Second, "the child's JVM dies", func() error {
		if pids := markedProcesses(pid); len(pids) > 0 {
			return fmt.Errorf("JVMs of the child still alive: %v", pids)
		}
		if _, err := ServerVersion(addr); err == nil {
			return fmt.Errorf("%s still answers", addr)
		}
		return nil
	})
}

// TestJVMDiesWithTestBinary runs a test binary that starts a server and
// exits without any cleanup, as on a test timeout; its JVM must die too.
func TestJVMDiesWithTestBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("relies on the Linux parent-death signal")
	}
	code, out, pid := runChild(t, "TestChild", "dies")
	if code != 3 {
		t.Fatalf("child exit code %d, want 3; output:\n%s", code, out)
	}
	waitGone(t, pid, childAddr(t, out))
}

// TestMainFailsOnLeak runs a test binary whose test leaves a server running
// (no cleanup registered): Main must kill it, name it and exit 1.
func TestMainFailsOnLeak(t *testing.T) {
	code, out, pid := runChild(t, "TestChild", "leaks")
	if code != 1 {
		t.Fatalf("child exit code %d, want 1; output:\n%s", code, out)
	}
	wantIn(t, out, "--- PASS: TestChild", "zktest: FAIL: 1 ZooKeeper server(s) were still running after the tests")
	waitGone(t, pid, childAddr(t, out))
}

// TestChild is the child of the two tests above.
func TestChild(t *testing.T) {
	switch os.Getenv(childEnv) {
	case "dies":
		s := StartServer(t, Versions()[0])
		fmt.Printf("ADDR=%s\n", s.Addr())
		os.Exit(3)
	case "leaks":
		s := startLeaking(t)
		fmt.Printf("ADDR=%s\n", s.Addr())
	default:
		t.Skip("run by TestJVMDiesWithTestBinary and TestMainFailsOnLeak")
	}
}
