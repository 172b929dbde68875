package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/etcdtest"
	"github.com/cosid-go/store/internal/testing/mysqltest"
	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// Every command test also runs on real ZooKeeper, one backend per version,
// and forEachPair moves between ZooKeeper and memory in both directions.
func init() {
	for _, version := range zktest.Versions() {
		backends = append(backends, backend{name: "zookeeper-" + version, fresh: func(t *testing.T) storeSpec {
			return storeSpec{driver: "zookeeper", options: map[string]string{
				"connectString": servers.addr(t, version),
				"root":          randomRoot(t),
				// Generous: the tests share a small machine with other
				// ZooKeeper tests, and no test here is about timeouts.
				"sessionTimeout":          "10s",
				"connectionTimeout":       "5s",
				"blockUntilConnectedWait": "20s",
			}}
		}})
	}
}

// randomRoot returns a root no other store of the tests uses: the tests
// share one server per version.
func randomRoot(t testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "/t" + hex.EncodeToString(b[:])
}

// TestMain stops the ZooKeeper servers after the tests; zktest.Wrap fails
// the binary if a server started in this process is still running. The
// shared PostgreSQL and MariaDB servers and etcd member stop too.
func TestMain(m *testing.M) {
	code := mysqltest.Wrap(etcdtest.Wrap(pgtest.Wrap(zktest.Wrap(m)))).Run()
	removeBinary()
	if err := servers.stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// The servers are shared by every test of the binary, so they must outlive
// all of them. zktest ties a server to the test that started it, and a
// server outliving the tests fails zktest.Wrap; so a child process of this
// binary runs TestZooKeeperHolder, which starts one server per version and
// holds them until its stdin closes. The child is started by the first
// test that needs a server; if this process dies, the child's stdin closes
// and it stops its servers.
const (
	holderEnv  = "COSID_STORECTL_ZK_HOLDER"
	holderMark = "storectl-zk-holder: serving: "
	// Bounds, not sleeps: the child's own start bounds are 30s a server.
	holderStartBound = 2 * time.Minute
	holderStopBound  = time.Minute
)

var servers holder

// TestZooKeeperHolder is not a test of its own: it does its work only in
// the child process described above (holderEnv set).
func TestZooKeeperHolder(t *testing.T) {
	if os.Getenv(holderEnv) == "" {
		return
	}
	release := make(chan struct{})
	var once sync.Once
	end := func() { once.Do(func() { close(release) }) }
	go func() {
		io.Copy(io.Discard, os.Stdin)
		end()
	}()
	var mu sync.Mutex
	for _, version := range zktest.Versions() {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			// A server that did not start fails this subtest; ending the
			// others too makes the child exit, which tells the parent.
			defer func() {
				if t.Failed() {
					end()
				}
			}()
			srv := zktest.StartServer(t, version)
			mu.Lock()
			fmt.Printf("%s%s %s\n", holderMark, version, srv.Addr())
			mu.Unlock()
			<-release
		})
	}
}

// holder is the parent's side of the child holding the servers.
type holder struct {
	once  sync.Once
	addrs map[string]string // version -> address
	err   error

	cmd      *exec.Cmd
	stdin    io.WriteCloser
	exited   chan struct{} // closed once the child is waited for
	read     chan struct{} // closed once output holds all the child wrote
	output   string
	stopOnce sync.Once
	stopErr  error
}

// addr returns the address of the server of version, starting the servers
// on the first call. It fails t if they could not be started.
func (h *holder) addr(t testing.TB, version string) string {
	t.Helper()
	h.once.Do(h.start)
	if h.err != nil {
		t.Fatal(h.err)
	}
	a, ok := h.addrs[version]
	if !ok {
		t.Fatalf("no ZooKeeper %s server among %v", version, h.addrs)
	}
	return a
}

func (h *holder) start() {
	versions := zktest.Versions()
	fail := func(format string, args ...any) {
		h.err = fmt.Errorf("ZooKeeper %s for the tests: "+format, append([]any{strings.Join(versions, " and ")}, args...)...)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestZooKeeperHolder$", "-test.count=1", "-test.timeout=0")
	cmd.Env = append(os.Environ(), holderEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		fail("%v", err)
		return
	}
	r, w, err := os.Pipe()
	if err != nil {
		fail("%v", err)
		return
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		fail("cannot run %s: %v", os.Args[0], err)
		return
	}
	h.cmd, h.stdin = cmd, stdin
	h.exited, h.read = make(chan struct{}), make(chan struct{})

	// One reader follows the child's output to its end, so the child never
	// blocks on a full pipe; it reports each server as the child names it.
	found := make(chan [2]string, len(versions))
	go func() {
		defer close(h.read)
		defer r.Close()
		var all strings.Builder
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := sc.Text()
			all.WriteString(line + "\n")
			if rest, ok := strings.CutPrefix(line, holderMark); ok {
				if v, a, ok := strings.Cut(rest, " "); ok {
					found <- [2]string{v, a}
				}
			}
		}
		h.output = all.String()
	}()
	go func() {
		cmd.Wait()
		close(h.exited)
	}()

	h.addrs = map[string]string{}
	bound := time.NewTimer(holderStartBound)
	defer bound.Stop()
	for len(h.addrs) < len(versions) {
		select {
		case f := <-found:
			h.addrs[f[0]] = f[1]
		case <-h.exited:
			<-h.read
			fail("could not be started (in a child process of the test binary, %s); its output:\n%s", cmd.ProcessState, h.output)
			h.stopOnce.Do(func() {}) // reported here already
			return
		case <-bound.C:
			fail("did not serve within %v (in a child process of the test binary); stopping it: %v", holderStartBound, h.stop())
			return
		}
	}
}

// stop ends the child, which stops its servers, and reports a child that
// did not end cleanly. It does nothing when the child was never started.
func (h *holder) stop() error {
	if h.cmd == nil {
		return nil
	}
	h.stopOnce.Do(func() { h.stopErr = h.end() })
	return h.stopErr
}

func (h *holder) end() error {
	h.stdin.Close()
	bound := time.NewTimer(holderStopBound)
	defer bound.Stop()
	select {
	case <-h.exited:
	case <-bound.C:
		h.cmd.Process.Kill()
		<-h.exited
		<-h.read
		return fmt.Errorf("the ZooKeeper holder (pid %d) did not end within %v of its release; killed it; its output:\n%s",
			h.cmd.Process.Pid, holderStopBound, h.output)
	}
	<-h.read
	if !h.cmd.ProcessState.Success() {
		return fmt.Errorf("the ZooKeeper holder (pid %d) ended with %s; its output:\n%s", h.cmd.Process.Pid, h.cmd.ProcessState, h.output)
	}
	return nil
}

// An unreachable server is a failure (exit code 1) with an error that
// names it, within the wait the options allow, and changes nothing.
func TestZooKeeperUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nobody listens on addr now
	zk := storeSpec{driver: "zookeeper", options: map[string]string{
		"connectString": addr, "blockUntilConnectedWait": "1s", "connectionTimeout": "1s"}}
	wantFast := func(start time.Time) {
		t.Helper()
		// 1s of waiting, and far less than the defaults (10s, 15s).
		if d := time.Since(start); d > 8*time.Second {
			t.Errorf("storectl took %v to give up with blockUntilConnectedWait=1s", d)
		}
	}

	start := time.Now()
	r := ctl(with(args("inspect"), zk.flags())...)
	r.want(t, exitFailed, "storectl inspect: cannot open zookeeper", "connectString="+addr,
		"no session with any of "+addr+" within 1s (blockUntilConnectedWait)")
	wantFast(start)
	if r.stdout != "" || strings.Contains(r.stderr, "storectl help") {
		t.Errorf("a failure, not bad usage, is reported on stderr only:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}

	// A migration to it changes nothing in the source.
	src := freshMemory(t)
	st := src.open(t)
	next(t, st, "orders", 10)
	start = time.Now()
	migrate(src, zk).want(t, exitFailed, "cannot open zookeeper", addr, "no session")
	wantFast(start)
	if _, sealed, err := st.Ranges().Current(t.Context(), "orders"); err != nil || sealed {
		t.Fatalf("a migration to an unreachable target sealed the source: %v, %v", sealed, err)
	}
}

// --timeout bounds the opening: with a 1s timeout, an unreachable server
// is reported after about 1s, not after blockUntilConnectedWait (60s).
func TestZooKeeperTimeoutBoundsOpening(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	zk := storeSpec{driver: "zookeeper", options: map[string]string{
		"connectString": addr, "blockUntilConnectedWait": "60s", "connectionTimeout": "30s"}}
	start := time.Now()
	r := ctl(with(args("inspect", "--timeout", "1s"), zk.flags())...)
	r.want(t, exitFailed, "storectl inspect: cannot open zookeeper", "no session with any of "+addr,
		"context deadline exceeded")
	if d := time.Since(start); d > 15*time.Second { // generous: a loaded machine
		t.Errorf("storectl inspect --timeout 1s took %v against an unreachable server", d)
	}
}
