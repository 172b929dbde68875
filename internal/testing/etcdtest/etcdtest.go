// Package etcdtest starts real etcd servers on loopback for the tests of
// the etcd driver and of storectl: one member, or a cluster of several,
// any of which can be partitioned from its peers (Partition). It
// starts the server binary and speaks only HTTP to it, so the store's own
// module, which holds it, does not need etcd's client or gRPC. The binary is the one
// scripts/install-etcd.sh builds (make etcd), found through .etcd/env at
// the repository root, or ETCD_BIN. A test that needs a server fails, with
// the reason, when none starts.
//
// It is a test helper: import it from _test.go files only.
package etcdtest

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/freeport"
	"github.com/cosid-go/store/internal/testing/netproxy"
	"github.com/cosid-go/store/internal/testing/srvproc"
)

// startWait bounds a cluster's start: generous, for a loaded machine.
const startWait = 90 * time.Second

// Member is one etcd server of a cluster.
type Member struct {
	Name      string
	ClientURL string // http://127.0.0.1:port
	// PeerURL is the address the other members reach it at: in a cluster
	// of several, its peer proxy's, in front of the peer port it listens on.
	PeerURL    string
	listenPeer string
	proxy      *netproxy.Proxy // nil in a single-member cluster
	dir        string
	args       []string
	logPath    string
	http       *http.Client // for /health: the client certificate on a TLS cluster

	mu   sync.Mutex
	proc *srvproc.Process // nil when stopped
}

// Cluster is a set of members started together.
type Cluster struct {
	Members []*Member
	bin     string
	mu      sync.Mutex
	cut     map[*Member]bool // partitioned from their peers
	unknown atomic.Int64     // peer connections whose dialer was not found
	tls     *tlsSetup        // nil: plaintext client ports (tls.go)
	// rootPassword is the root user's, once EnableAuth made it.
	rootPassword string
}

// Binary returns the etcd binary's path, or why there is none.
func Binary() (string, error) { return binary("ETCD_BIN") }

// Tool returns the path of "etcdctl" or "etcdutl" of the server's version,
// which scripts/install-etcd.sh builds beside it, or why there is none.
func Tool(name string) (string, error) {
	switch name {
	case "etcdctl", "etcdutl":
		return binary(strings.ToUpper(name) + "_BIN")
	}
	return "", fmt.Errorf("etcdtest: no tool %q (etcdctl, etcdutl)", name)
}

// binary reads the path named key from the environment, or from the .etcd/env
// file nearest above the working directory.
func binary(key string) (string, error) {
	if p := os.Getenv(key); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		env := filepath.Join(dir, ".etcd", "env")
		if f, err := os.Open(env); err == nil {
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), key+"="); ok {
					if _, err := os.Stat(v); err != nil {
						return "", fmt.Errorf("%s names %s: %v; run make etcd", env, v, err)
					}
					return v, nil
				}
			}
			return "", fmt.Errorf("%s has no %s line; run make etcd", env, key)
		}
		if _, err := os.Stat(filepath.Join(dir, "scripts", "install-etcd.sh")); err == nil {
			return "", fmt.Errorf("no etcd server: %s is missing; run `make etcd` (scripts/install-etcd.sh)", env)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no etcd server: no .etcd/env above the working directory; run `make etcd` or set %s", key)
		}
		dir = parent
	}
}

// Start starts an n-member cluster and waits until every member reports
// itself healthy; it is stopped, its files removed, when the test ends. A
// port taken meanwhile by another process makes it retry on fresh ports.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	return start(t, n, nil)
}

func start(t testing.TB, n int, tls *tlsSetup) *Cluster {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	var last error
	for range 3 {
		c := &Cluster{bin: bin, cut: map[*Member]bool{}, tls: tls}
		if last = c.start(t, t.TempDir(), n); last == nil {
			t.Cleanup(c.Close)
			return c
		}
		c.Close()
	}
	t.Fatalf("etcdtest: no %d-member etcd cluster started: %v", n, last)
	return nil
}

func (c *Cluster) start(t testing.TB, dir string, n int) error {
	var initial []string
	for i := range n {
		cp, err := freeport.Get()
		if err != nil {
			return err
		}
		pp, err := freeport.Get()
		if err != nil {
			return err
		}
		m := &Member{
			Name:       fmt.Sprintf("m%d", i),
			ClientURL:  fmt.Sprintf("%s://127.0.0.1:%d", c.scheme(), cp),
			listenPeer: fmt.Sprintf("http://127.0.0.1:%d", pp),
			http:       c.httpClient(),
		}
		m.PeerURL = m.listenPeer
		if n > 1 {
			m.proxy = netproxy.New(t, fmt.Sprintf("127.0.0.1:%d", pp))
			m.PeerURL = "http://" + m.proxy.Addr()
		}
		m.dir = filepath.Join(dir, m.Name)
		m.logPath = filepath.Join(dir, m.Name+".log")
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"="+m.PeerURL)
	}
	for _, m := range c.Members {
		if m.proxy != nil {
			m.proxy.SetOrigin(c.dialer) // reads c.Members: complete now
		}
		m.args = []string{
			"--name", m.Name, "--data-dir", m.dir,
			"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
			"--listen-peer-urls", m.listenPeer, "--initial-advertise-peer-urls", m.PeerURL,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", filepath.Base(dir),
			"--log-level", "warn",
			// No quota surprises in a test run.
			"--quota-backend-bytes", "1073741824",
			// The tests kill members, never the machine: what a member
			// wrote is in the page cache and survives its death, and
			// fsyncs on a loaded machine would only slow every write.
			"--unsafe-no-fsync",
			// Each user added and each client's authentication hashes a
			// password: at the default cost (10) that took seconds at load
			// 60 and the harness's HTTP calls timed out. The tests' secrets
			// are random and thrown away: the lowest cost does.
			"--bcrypt-cost", "4",
		}
		m.args = append(m.args, c.tlsArgs()...)
		if err := m.run(c.bin); err != nil {
			return err
		}
	}
	for _, m := range c.Members {
		if err := m.waitHealthy(startWait); err != nil {
			return err
		}
	}
	return nil
}

// launchMarker starts the line written to a member's log before each run.
const launchMarker = "=== etcdtest: launch at "

func (m *Member) run(bin string) error {
	cmd := exec.Command(bin, m.args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p, err := srvproc.Start(cmd, srvproc.Spec{Helper: "etcdtest", Log: m.logPath, Marker: launchMarker,
		Desc: func(pid int) string { return fmt.Sprintf("etcd member %s (pid %d) at %s", m.Name, pid, m.ClientURL) }})
	if err != nil {
		return fmt.Errorf("start %s: %v", bin, err)
	}
	m.mu.Lock()
	m.proc = p
	m.mu.Unlock()
	return nil
}

// process returns the running process, or nil.
func (m *Member) process() *srvproc.Process {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc
}

// waitHealthy polls the member's /health until it says true, it exits, or
// d passes.
func (m *Member) waitHealthy(d time.Duration) error {
	p := m.process()
	deadline := time.Now().Add(d)
	client := m.http
	defer client.CloseIdleConnections() // no connection outlives the wait
	for time.Now().Before(deadline) {
		select {
		case <-p.Done():
			return fmt.Errorf("member %s exited while starting (%v); log:\n%s", m.Name, p.Err(), m.tail())
		default:
		}
		if resp, err := client.Get(m.ClientURL + "/health"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), `"health":"true"`) {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("member %s not healthy after %v; log:\n%s", m.Name, d, m.tail())
}

// tail returns the end of the member's log since its latest launch.
func (m *Member) tail() string {
	return srvproc.Tail(srvproc.LastRun(m.logPath, launchMarker), 30)
}

// DataDir returns the member's --data-dir, which a test may replace while
// the member is stopped (a snapshot restored, as an operator would).
func (m *Member) DataDir() string { return m.dir }

// Endpoints returns every member's client URL.
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, m := range c.Members {
		out = append(out, m.ClientURL)
	}
	return out
}

// Stop kills the member (SIGKILL: what a crash leaves) and waits for it.
func (m *Member) Stop() {
	m.mu.Lock()
	p := m.proc
	m.proc = nil
	m.mu.Unlock()
	if p != nil {
		p.Halt(syscall.SIGKILL, 0, nil)
	}
}

// Pause stops the member's process (SIGSTOP) with its sockets open, as a
// member cut off from everyone, and returns once every thread of it has
// stopped (the kill returns before that, and on a loaded machine a thread
// may still answer a request meanwhile); Resume lets it go on.
func (m *Member) Pause() {
	if p := m.process(); p != nil {
		p.Pause(10 * time.Second)
	}
}

func (m *Member) Resume() { m.signal(syscall.SIGCONT) }

func (m *Member) signal(sig syscall.Signal) {
	if p := m.process(); p != nil {
		_ = p.Signal(sig) // an error: it has exited
	}
}

// Restart starts a stopped member again on its data and waits until it is
// healthy (a cluster needs a quorum of members up for that).
func (c *Cluster) Restart(t testing.TB, m *Member) {
	t.Helper()
	m.Stop()
	if err := m.run(c.bin); err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	if err := m.waitHealthy(startWait); err != nil {
		t.Fatalf("etcdtest: restart: %v", err)
	}
}

// RestartAll starts the stopped members again on their data, all before
// waiting for any (a member of a cluster is healthy only once a quorum of
// them is up), and waits until each is healthy: every member of a cluster
// restored from a snapshot, say.
func (c *Cluster) RestartAll(t testing.TB) {
	t.Helper()
	for _, m := range c.Members {
		m.Stop()
		if err := m.run(c.bin); err != nil {
			t.Fatalf("etcdtest: %v", err)
		}
	}
	for _, m := range c.Members {
		if err := m.waitHealthy(startWait); err != nil {
			t.Fatalf("etcdtest: restart of every member: %v", err)
		}
	}
}

// Close stops every member.
func (c *Cluster) Close() {
	for _, m := range c.Members {
		m.Resume()
		m.Stop()
	}
}
