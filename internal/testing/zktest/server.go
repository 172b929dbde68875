package zktest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/srvproc"
)

const (
	mainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

	// Bounds, not sleeps: readiness is polled every pollInterval. They are
	// generous because CI machines are slow and run packages in parallel.
	startTimeout  = 30 * time.Second // a single server until it serves
	quorumTimeout = 60 * time.Second // an ensemble until a leader serves
	stopTimeout   = 10 * time.Second // SIGTERM grace before SIGKILL
	startGrace    = 10 * time.Second // more for a start that makes progress
	startCap      = 3 * time.Minute  // a start in all, progress or not
	pollInterval  = 50 * time.Millisecond

	logTailLines = 30
	// startMarker begins the log of each launch, so a failure report and
	// the bind-failure check look at the latest run only.
	startMarker = "=== zktest: launch "
)

// jvmFlags keep each server light: tests run several JVMs on small machines.
var jvmFlags = []string{
	"-Xmx128m",
	"-XX:+UseSerialGC",
	"-XX:TieredStopAtLevel=1",
	// Perf data files in /tmp would outlive a SIGKILLed JVM.
	"-XX:-UsePerfData",
	"-XX:+ExitOnOutOfMemoryError",
	// The container manager deletes empty container nodes every minute by
	// default; tests that watch one vanish should not wait that long.
	"-Dznode.container.checkIntervalMs=500",
	// A member that starts before its peers backs off its election
	// notifications up to 60s, so an ensemble whose JVMs came up unevenly
	// could take many seconds to elect. Read at class load, hence -D.
	"-Dzookeeper.fastleader.maxNotificationInterval=1000",
	// slf4j-simple logs to stderr (the log file); times help read a failure.
	"-Dorg.slf4j.simpleLogger.showDateTime=true",
	"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
}

// Server is one ZooKeeper server: a JVM started by the tests, or an existing
// server named by COSID_ZK_SERVERS. Its methods report failures through the
// testing.TB of the test that started it, so call them from that test's
// goroutine (or a subtest's, while the test waits for it).
type Server struct {
	t        testing.TB
	version  string
	existing string // COSID_ZK_SERVERS; nothing below is used then

	cp           string
	dir          string // zoo.cfg, data/, server.log
	myid, size   int    // member myid of an ensemble of size; 0, 0 standalone
	clientPort   int
	securePort   int           // TLS client port; 0 without TLS
	secure       *secureConfig // nil without TLS
	peerPort     int
	electionPort int

	// links[myid] are the peer and election addresses this member uses
	// for member myid: proxies, in an ensemble started with links.
	links map[int][2]string

	minSession time.Duration // minSessionTimeout; 0 is the default, 2 ticks
	maxSession time.Duration // maxSessionTimeout; 0 is the default, 60s

	mu   sync.Mutex
	proc *srvproc.Process // nil when stopped
}

// StartServer starts a standalone ZooKeeper server of version ("3.8", "3.9")
// on a free 127.0.0.1 port with its own data directory, and returns once it
// serves. The server is killed when the test ends. If COSID_ZK_SERVERS is
// set, it starts nothing and returns that server instead.
func StartServer(t testing.TB, version string) *Server {
	t.Helper()
	return startServer(t, version, nil)
}

// startServer starts a standalone server; sec, when not nil, adds a TLS
// client port (secure.go).
func startServer(t testing.TB, version string, sec *secureConfig) *Server {
	t.Helper()
	if addr := strings.TrimSpace(os.Getenv(envServers)); addr != "" {
		t.Logf("zktest: using the existing ZooKeeper at %s (%s is set); ZooKeeper %s is not started", addr, envServers, version)
		return &Server{t: t, version: version, existing: addr}
	}
	cp, err := classpath(version)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, version: version, cp: cp, dir: t.TempDir(), secure: sec}
	t.Cleanup(s.cleanup)
	for attempt := 1; ; attempt++ {
		if s.clientPort, err = freePort(); err != nil {
			t.Fatal(err)
		}
		if sec != nil {
			if s.securePort, err = freePort(); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.writeConfig(nil); err != nil {
			t.Fatal(err)
		}
		if err := s.launch(); err != nil {
			t.Fatalf("zktest: start %s: %v", s, err)
		}
		err = s.waitServing(startTimeout)
		if err == nil {
			return s
		}
		s.halt(syscall.SIGKILL)
		// The free port may have been taken before the JVM bound it.
		if attempt == 1 && s.bindFailed() {
			t.Logf("zktest: %s: port taken meanwhile, retrying on another", s)
			continue
		}
		t.Fatal(s.failure("did not start", err))
	}
}

// String describes the server for messages.
func (s *Server) String() string {
	if s.existing != "" {
		return "existing ZooKeeper " + s.existing
	}
	if s.size > 0 {
		return fmt.Sprintf("ZooKeeper %s member %d/%d at %s", s.version, s.myid, s.size, s.Addr())
	}
	return fmt.Sprintf("ZooKeeper %s server at %s", s.version, s.Addr())
}

// Addr returns the client address, "127.0.0.1:port" (for an existing server,
// the value of COSID_ZK_SERVERS, which may list several).
func (s *Server) Addr() string {
	if s.existing != "" {
		return s.existing
	}
	return "127.0.0.1:" + strconv.Itoa(s.clientPort)
}

// Version returns the version asked for, e.g. "3.9".
func (s *Server) Version() string { return s.version }

// Running reports whether the server's JVM is alive.
func (s *Server) Running() bool {
	if s.existing != "" {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running()
}

func (s *Server) running() bool {
	if s.proc == nil {
		return false
	}
	select {
	case <-s.proc.Done():
		return false
	default:
		return true
	}
}

// Mode returns what srvr says the server is: "standalone", "leader",
// "follower", or "" when it does not serve (stopped, electing, syncing).
func (s *Server) Mode() string {
	answer, err := FourLetterWord(s.Addr(), "srvr")
	if err != nil {
		return ""
	}
	return srvrField(answer, "Mode")
}

// Stop stops the server gracefully (SIGTERM; SIGKILL after 10s) and waits
// for the JVM to exit. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.t.Helper()
	s.mustOwn("Stop")
	s.halt(syscall.SIGTERM)
}

// Kill kills the server (SIGKILL) and waits for the JVM to exit.
func (s *Server) Kill() {
	s.t.Helper()
	s.mustOwn("Kill")
	s.halt(syscall.SIGKILL)
}

// Pause stops the server's JVM (SIGSTOP) without ending it, as a long
// garbage collection or a frozen VM would: its sockets stay open and
// nothing answers. Resume continues it; a server still paused when the
// test ends is killed as usual.
func (s *Server) Pause() {
	s.t.Helper()
	s.mustOwn("Pause")
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		s.t.Fatalf("zktest: Pause: %s is not running", s)
	}
	p.Pause(10 * time.Second)
}

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() {
	s.t.Helper()
	s.signal("Resume", syscall.SIGCONT)
}

func (s *Server) signal(method string, sig syscall.Signal) {
	s.t.Helper()
	s.mustOwn(method)
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		s.t.Fatalf("zktest: %s: %s is not running", method, s)
	}
	if err := p.Signal(sig); err != nil {
		s.t.Fatalf("zktest: %s %s: %v", method, s, err)
	}
}

// Start restarts a stopped server with the same data directory and ports,
// and waits until it serves (on its TLS port too, if it has one). An
// ensemble member serves only once it has joined a quorum; to restart
// members that can only form one together, use StartNoWait on each, then
// Ensemble.WaitQuorum.
func (s *Server) Start() {
	s.t.Helper()
	s.restart("Start")
	timeout := startTimeout
	if s.size > 0 {
		timeout = quorumTimeout
	}
	if err := s.waitServing(timeout); err != nil {
		s.halt(syscall.SIGKILL)
		s.t.Fatal(s.failure("did not serve after a restart", err))
	}
	if err := s.waitSecure(timeout); err != nil {
		s.halt(syscall.SIGKILL)
		s.t.Fatal(s.failure("does not listen on its TLS port after a restart", err))
	}
}

// defaultMaxSession is the servers' maxSessionTimeout unless a test sets
// another (SetSessionTimeouts).
const defaultMaxSession = 60 * time.Second

// SetSessionTimeouts sets the least and the largest session timeout the
// server grants (minSessionTimeout, maxSessionTimeout; 0 keeps the
// defaults, 2 ticks = 400ms and 60s) from its next Start on, keeping its
// data: as an operator rolling out a config change would, sessions then
// reconnect with a timeout negotiated again. The server must be stopped.
func (s *Server) SetSessionTimeouts(least, largest time.Duration) {
	s.t.Helper()
	s.mustOwn("SetSessionTimeouts")
	if s.Running() {
		s.t.Fatalf("zktest: SetSessionTimeouts: %s is running; stop it first", s)
	}
	if (least != 0 && least < 400*time.Millisecond) || (largest != 0 && largest < max(least, 400*time.Millisecond)) {
		s.t.Fatalf("zktest: SetSessionTimeouts(%v, %v): want 400ms (2 ticks) <= least <= largest", least, largest)
	}
	cfg, err := os.ReadFile(s.cfgPath())
	if err != nil {
		s.t.Fatalf("zktest: SetSessionTimeouts: %v", err)
	}
	s.minSession, s.maxSession = least, largest
	cfg = sessionLines.ReplaceAll(cfg, nil)
	cfg = append(cfg, s.sessionConfig()...)
	if err := os.WriteFile(s.cfgPath(), cfg, 0o644); err != nil {
		s.t.Fatalf("zktest: SetSessionTimeouts: %v", err)
	}
}

var sessionLines = regexp.MustCompile(`(?m)^(min|max)SessionTimeout=\d+\n`)

// sessionConfig is zoo.cfg's lines of the session timeout bounds.
func (s *Server) sessionConfig() string {
	largest := s.maxSession
	if largest == 0 {
		largest = defaultMaxSession
	}
	lines := fmt.Sprintf("maxSessionTimeout=%d\n", largest.Milliseconds())
	if s.minSession > 0 {
		lines += fmt.Sprintf("minSessionTimeout=%d\n", s.minSession.Milliseconds())
	}
	return lines
}

// StartNoWait restarts a stopped server like Start but returns at once.
func (s *Server) StartNoWait() {
	s.t.Helper()
	s.restart("StartNoWait")
}

func (s *Server) restart(method string) {
	s.t.Helper()
	s.mustOwn(method)
	if err := s.launch(); err != nil {
		s.t.Fatalf("zktest: restart %s: %v", s, err)
	}
}

func (s *Server) mustOwn(method string) {
	s.t.Helper()
	if s.existing != "" {
		s.t.Fatalf("zktest: Server.%s needs a server started by the tests, but %s=%s points at an existing one; unset %s to run this test",
			method, envServers, s.existing, envServers)
	}
}

// DataDir returns the server's dataDir (zoo.cfg's), whose version-2
// directory a test may copy, or replace while the server is stopped, as an
// operator backs up and restores a server.
func (s *Server) DataDir() string {
	s.t.Helper()
	s.mustOwn("DataDir")
	return filepath.Join(s.dir, "data")
}

// Classpath returns the classpath the server runs with, for tools of the
// same version (org.apache.zookeeper.ZooKeeperMain, zkCli.sh's class).
func (s *Server) Classpath() string { return s.cp }

func (s *Server) cfgPath() string { return filepath.Join(s.dir, "zoo.cfg") }
func (s *Server) logPath() string { return filepath.Join(s.dir, "server.log") }

// writeConfig writes zoo.cfg (and myid for an ensemble member). members is
// nil for a standalone server.
func (s *Server) writeConfig(members []*Server) error {
	data := filepath.Join(s.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s, written by zktest\n", s)
	// tickTime 200ms: sessions down to 400ms (2 ticks) are allowed and
	// elections settle fast. maxSessionTimeout would otherwise be 20 ticks
	// (4s), silently shortening the sessions the tests ask for.
	b.WriteString("tickTime=200\ninitLimit=20\nsyncLimit=10\n" + s.sessionConfig())
	fmt.Fprintf(&b, "dataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n", data, s.clientPort)
	b.WriteString("admin.enableServer=false\n4lw.commands.whitelist=srvr,ruok,stat,mntr,conf,cons\n")
	// Test data need not survive a machine crash; fsync per write only
	// slows the tests down (a killed JVM loses nothing: the kernel has it).
	b.WriteString("forceSync=no\nmaxClientCnxns=0\n")
	s.writeSecureConfig(&b)
	for _, m := range members {
		if l, ok := s.links[m.myid]; ok {
			fmt.Fprintf(&b, "server.%d=%s:%s\n", m.myid, l[0], l[1][strings.LastIndex(l[1], ":")+1:])
			continue
		}
		fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d\n", m.myid, m.peerPort, m.electionPort)
	}
	if s.myid > 0 {
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(s.myid)+"\n"), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(s.cfgPath(), []byte(b.String()), 0o644)
}

func (s *Server) javaArgs() []string {
	args := append([]string(nil), jvmFlags...)
	return append(args,
		// Marks the JVM as this test binary's, so Main can find it by scanning
		// processes even if the bookkeeping here missed it.
		"-D"+ownerProp+"="+strconv.Itoa(os.Getpid()),
		"-cp", s.cp, mainClass, s.cfgPath())
}

func (s *Server) commandLine() string {
	return "java " + strings.Join(s.javaArgs(), " ")
}

// launch starts the JVM without waiting for it to serve.
func (s *Server) launch() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running() {
		return errors.New("it is already running")
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return fmt.Errorf("%v (install a JRE; %s)", err, installHint)
	}
	cmd := exec.Command(java, s.javaArgs()...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = procAttr()
	p, err := srvproc.Start(cmd, srvproc.Spec{Helper: "zktest", Log: s.logPath(), Marker: startMarker,
		Desc: func(pid int) string { return fmt.Sprintf("%s (pid %d)", s, pid) }})
	if err != nil {
		return err
	}
	s.proc = p
	return nil
}

// halt signals the JVM and waits for it to exit; after SIGTERM it escalates
// to SIGKILL once stopTimeout has passed.
func (s *Server) halt(sig syscall.Signal) {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return
	}
	p.Halt(sig, stopTimeout, func() { s.t.Logf("zktest: %s ignored SIGTERM for %v; killing it", s, stopTimeout) })
}

// waitServing polls srvr until the server serves (its answer has a Mode),
// the JVM exits, or timeout passes with the JVM making no progress. A JVM
// that used CPU since the last look gets startGrace more, up to
// startCap in all: on a loaded machine a JVM may get so little CPU that it
// logs nothing for half a minute, and a fixed bound failed such merely
// slow starts, while a hung one still fails after timeout.
func (s *Server) waitServing(timeout time.Duration) error {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		return errors.New("it is not running")
	}
	start := time.Now()
	deadline := start.Add(timeout)
	cpu := cpuTicks(p.Pid())
	for {
		if s.Mode() != "" {
			return nil
		}
		if now := time.Now(); now.After(deadline) {
			used := cpuTicks(p.Pid())
			if used <= cpu || now.Sub(start) >= startCap {
				return fmt.Errorf("it did not serve within %v (srvr kept failing or answering that it is not serving; CPU ticks used by the JVM: %d, then %d)",
					now.Sub(start).Round(time.Second), cpu, used)
			}
			cpu, deadline = used, now.Add(startGrace)
		}
		select {
		case <-p.Done():
			return fmt.Errorf("the JVM exited: %v", p.Err())
		case <-time.After(pollInterval):
		}
	}
}

// lastRun returns the log of the latest launch.
func (s *Server) lastRun() string { return srvproc.LastRun(s.logPath(), startMarker) }

func (s *Server) bindFailed() bool {
	return strings.Contains(s.lastRun(), "Address already in use")
}

// logTail returns the last lines of the latest launch's log.
func (s *Server) logTail() string {
	return "\t" + strings.ReplaceAll(srvproc.Tail(s.lastRun(), logTailLines), "\n", "\n\t")
}

// failure describes a server that did not start: what, why, how it was run
// and what it logged.
func (s *Server) failure(what string, err error) string {
	return fmt.Sprintf("zktest: %s %s: %v\ncommand: %s\nlast lines of %s:\n%s",
		s, what, err, s.commandLine(), s.logPath(), s.logTail())
}

func (s *Server) cleanup() {
	if s.existing != "" {
		return
	}
	s.halt(syscall.SIGKILL)
	if s.t.Failed() {
		s.t.Logf("zktest: the test failed; last lines of the log of %s:\n%s", s, s.logTail())
	}
}

// Ensemble is a ZooKeeper ensemble started by the tests. Members[i] has myid
// i+1.
type Ensemble struct {
	Members []*Server
	t       testing.TB

	// links[i] are the proxies of every member-to-member link of member i,
	// both ways (StartLinkedEnsemble only).
	links  [][]*Proxy
	linked bool
}

// StartEnsemble starts an ensemble of n servers of version on free
// 127.0.0.1 ports and returns once every member serves and one leads. The
// members are killed when the test ends. It fails the test when
// COSID_ZK_SERVERS is set: an existing server cannot stand in for one.
func StartEnsemble(t testing.TB, version string, n int) *Ensemble {
	t.Helper()
	return startEnsemble(t, version, n, false)
}

// StartLinkedEnsemble is StartEnsemble with every member-to-member link
// (quorum and election ports) through a loopback Proxy of its own, so that
// Isolate can cut one member off from the others while its clients stay
// connected. One limit: ZooKeeper answers an election connection from a
// lower id by connecting back to the address that member announces (its
// real port), so those election links bypass the proxies; the quorum links,
// which carry the leader's pings and the followers' requests, never do.
func StartLinkedEnsemble(t testing.TB, version string, n int) *Ensemble {
	t.Helper()
	return startEnsemble(t, version, n, true)
}

// Isolate freezes every member-to-member link of Members[i], both ways:
// its bytes are held with the sockets open, as in a network partition.
func (e *Ensemble) Isolate(i int) {
	e.mustLink("Isolate")
	for _, p := range e.links[i] {
		p.Freeze()
	}
}

// Heal undoes Isolate(i).
func (e *Ensemble) Heal(i int) {
	e.mustLink("Heal")
	for _, p := range e.links[i] {
		p.Thaw()
	}
}

func (e *Ensemble) mustLink(method string) {
	if !e.linked {
		e.t.Fatalf("zktest: Ensemble.%s needs an ensemble started by StartLinkedEnsemble", method)
	}
}

// link puts a proxy on each link from member i to member j (j's quorum and
// election ports, as i dials them), and lists it under both members.
func (e *Ensemble) link() {
	e.links = make([][]*Proxy, len(e.Members))
	for i, from := range e.Members {
		from.links = map[int][2]string{}
		for j, to := range e.Members {
			if i == j {
				continue
			}
			peer := NewProxy(e.t, fmt.Sprintf("127.0.0.1:%d", to.peerPort))
			election := NewProxy(e.t, fmt.Sprintf("127.0.0.1:%d", to.electionPort))
			from.links[to.myid] = [2]string{peer.Addr(), election.Addr()}
			e.links[i] = append(e.links[i], peer, election)
			e.links[j] = append(e.links[j], peer, election)
		}
	}
}

func startEnsemble(t testing.TB, version string, n int, linked bool) *Ensemble {
	t.Helper()
	if addr := strings.TrimSpace(os.Getenv(envServers)); addr != "" {
		t.Fatalf("zktest: StartEnsemble needs servers started by the tests, but %s=%s points at an existing one; unset %s to run this test",
			envServers, addr, envServers)
	}
	if n < 1 {
		t.Fatalf("zktest: StartEnsemble: %d members", n)
	}
	cp, err := classpath(version)
	if err != nil {
		t.Fatal(err)
	}
	e := &Ensemble{t: t, linked: linked}
	for i := range n {
		e.Members = append(e.Members, &Server{t: t, version: version, cp: cp, dir: t.TempDir(), myid: i + 1, size: n})
	}
	t.Cleanup(e.cleanup)
	for attempt := 1; ; attempt++ {
		for _, m := range e.Members {
			for _, p := range []*int{&m.clientPort, &m.peerPort, &m.electionPort} {
				if *p, err = freePort(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if linked {
			e.link()
		}
		for _, m := range e.Members {
			if err := m.writeConfig(e.Members); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range e.Members {
			if err := m.launch(); err != nil {
				t.Fatalf("zktest: start %s: %v", m, err)
			}
		}
		failed, err := e.waitAllServing(quorumTimeout)
		if err == nil {
			return e
		}
		bind := false
		for _, m := range e.Members {
			m.halt(syscall.SIGKILL)
			bind = bind || m.bindFailed()
		}
		if attempt == 1 && bind {
			t.Logf("zktest: a port of the ensemble was taken meanwhile, retrying on others")
			continue
		}
		var msg strings.Builder
		fmt.Fprintf(&msg, "zktest: ZooKeeper %s ensemble of %d did not start: %v", version, n, err)
		if failed != nil {
			fmt.Fprintf(&msg, "\n%s", failed.failure("failed", err))
		}
		for _, m := range e.Members {
			if m != failed {
				fmt.Fprintf(&msg, "\nlast lines of %s (%s):\n%s", m.logPath(), m, m.logTail())
			}
		}
		t.Fatal(msg.String())
	}
}

// waitAllServing polls until every member serves and one is the leader. On
// failure it names the member that exited, if one did.
func (e *Ensemble) waitAllServing(timeout time.Duration) (*Server, error) {
	deadline := time.Now().Add(timeout)
	for {
		serving, leader := 0, false
		for _, m := range e.Members {
			m.mu.Lock()
			p := m.proc
			m.mu.Unlock()
			select {
			case <-p.Done():
				return m, fmt.Errorf("%s: the JVM exited: %v", m, p.Err())
			default:
			}
			switch m.Mode() {
			case "leader":
				leader = true
				serving++
			case "":
			default:
				serving++
			}
		}
		if leader && serving == len(e.Members) {
			return nil, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("after %v, %d of %d members serve, leader elected: %v", timeout, serving, len(e.Members), leader)
		}
		time.Sleep(pollInterval)
	}
}

// ConnectString returns the members' addresses, comma separated.
func (e *Ensemble) ConnectString() string {
	addrs := make([]string, len(e.Members))
	for i, m := range e.Members {
		addrs[i] = m.Addr()
	}
	return strings.Join(addrs, ",")
}

// Leader returns the index in Members of the member srvr reports as the
// serving leader, or -1 if there is none.
func (e *Ensemble) Leader() int {
	for i, m := range e.Members {
		if m.Running() && m.Mode() == "leader" {
			return i
		}
	}
	return -1
}

// WaitQuorum blocks until a leader serves (which implies a quorum of
// followers has synced with it), failing t after 60s.
func (e *Ensemble) WaitQuorum(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(quorumTimeout)
	for e.Leader() < 0 {
		if time.Now().After(deadline) {
			var msg strings.Builder
			fmt.Fprintf(&msg, "zktest: no ZooKeeper leader serves after %v", quorumTimeout)
			for _, m := range e.Members {
				state := "stopped"
				if m.Running() {
					state = "running, mode " + strconv.Quote(m.Mode())
				}
				fmt.Fprintf(&msg, "\n%s (%s); last lines of %s:\n%s", m, state, m.logPath(), m.logTail())
			}
			t.Fatal(msg.String())
		}
		time.Sleep(pollInterval)
	}
}

func (e *Ensemble) cleanup() {
	for _, m := range e.Members {
		m.halt(syscall.SIGKILL)
	}
	if e.t.Failed() {
		for _, m := range e.Members {
			e.t.Logf("zktest: the test failed; last lines of the log of %s:\n%s", m, m.logTail())
		}
	}
}
