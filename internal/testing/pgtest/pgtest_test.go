package pgtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/internal/testing/srvproc"
)

const childEnv = "PGTEST_CHILD_DIES"

func TestMain(m *testing.M) { Main(m) }

func connect(t *testing.T, connString string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, connString)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// A committed row survives a kill of the whole server and a restart.
func TestKillRestartKeepsCommits(t *testing.T) {
	s := Start(t)
	ctx := t.Context()
	c := connect(t, s.ConnString())
	if _, err := c.Exec(ctx, "CREATE TABLE t (v int); INSERT INTO t VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	if err := c.Ping(ctx); err == nil {
		t.Fatal("a connection to a killed server still answers")
	}
	s.Restart(t)
	var v int
	if err := connect(t, s.ConnString()).QueryRow(ctx, "SELECT v FROM t").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after restart: v = %d, err = %v; want 42", v, err)
	}
}

// The proxy cuts an open connection, and forwards again after Restore.
func TestProxyCut(t *testing.T) {
	s := Shared(t)
	p := NewProxy(t, s.Addr())
	c := connect(t, ConnStringAt(p.Addr()))
	ctx := t.Context()
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	if err := c.Ping(ctx); err == nil {
		t.Fatal("a cut connection still answers")
	}
	p.Restore()
	if err := connect(t, ConnStringAt(p.Addr())).Ping(ctx); err != nil {
		t.Fatalf("after Restore: %v", err)
	}
}

// A server dies with the test binary that started it, even when the binary
// is killed and runs no cleanup.
func TestServerDiesWithTestBinary(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		s, err := start("child", defaultMaxConns)
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("PID " + strconv.Itoa(s.in.Pid()) + " DIR " + s.in.Dir + "\n")
		select {} // killed by the parent
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestServerDiesWithTestBinary$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	var dir string
	buf := make([]byte, 4096)
	n, _ := out.Read(buf)
	var word1, word2 string
	if _, err := fmt.Sscan(string(buf[:n]), &word1, &pid, &word2, &dir); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q: %v", buf[:n], err)
	}
	defer os.RemoveAll(dir)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	deadline := time.Now().Add(srvproc.StopTimeout)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(-pid, syscall.SIGKILL)
			t.Fatalf("postmaster %d still alive %v after its test binary was killed", pid, srvproc.StopTimeout)
		}
		time.Sleep(srvproc.PollInterval) // a remote state: poll, bounded
	}
}
