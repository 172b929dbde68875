// Package runs proves, with real OS processes, that runs of one owner
// never issue the same Snowflake ID: processes given the same owner key
// and the same store.WithIncarnation label at once, a restart while the
// earlier process still runs, and a restart after a crash with the clock
// behind. Each process is the test binary itself, started again with an
// environment variable that makes it a generator (Child); the test counts
// the IDs every process printed and fails on a value printed twice.
//
// LayoutKept (layout.go) proves that a namespace keeps its ID layout.
//
// It is a test helper: import it from _test.go files only.
package runs

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/idgen"
	"github.com/cosid-go/store/internal/testing/poll"
)

// childEnv carries a generator's settings (JSON) to the child process.
const childEnv = "COSID_RUNS_CHILD"

// Label and Owner are what every process of a scenario is given: a pod
// name, as a StatefulSet gives a restarted pod the same one.
const (
	Owner = "pod-orders-0"
	Label = "pod-orders-0"
)

// settings are one generator's.
type settings struct {
	Driver  string
	Options map[string]string
	NS      string
	Limit   int
	Reclaim bool
	SkewMs  int64 // the generator's clock runs this far behind
}

// Child makes the test binary a generator when it was started as one by
// Run, and then never returns; otherwise it returns at once. Call it first
// in the test that calls Run.
func Child() {
	v := os.Getenv(childEnv)
	if v == "" {
		return
	}
	var s settings
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		fmt.Fprintln(os.Stderr, "runs child:", err)
		os.Exit(2)
	}
	os.Exit(child(s))
}

// child issues IDs, a few each millisecond, printing each, until its
// stdin closes; then it closes the generator (releasing the slot). An
// error is printed as "E ..." and ends the issuing, not the process.
func child(s settings) int {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	st, err := store.Open(s.Driver, s.Options, store.WithOwner(Owner), store.WithIncarnation(Label))
	if err != nil {
		fmt.Fprintf(out, "E open: %v\n", err)
		return 1
	}
	defer st.Close()
	skew := time.Duration(s.SkewMs) * time.Millisecond
	g, err := idgen.NewSnowflake(ctx, st, store.Namespace{Name: s.NS, Limit: s.Limit, Tolerance: 100 * time.Millisecond}, Owner,
		idgen.SnowflakeOptions{
			// 3s, not 1s: at load 30 a renewal went unanswered for 900ms
			// (ttl less margin), the lease was lost, and the restarted
			// run issued too few IDs to prove anything.
			Acquire: store.AcquireOptions{TTL: 3 * time.Second, Reclaim: s.Reclaim},
			Clock:   func() time.Time { return time.Now().Add(-skew) },
			MaxWait: 20 * time.Second, // the wait for a floor left by an earlier run
		})
	if err != nil {
		fmt.Fprintf(out, "E snowflake: %v\n", err)
		out.Flush()
		<-stop
		return 0
	}
	l := g.Session().Lease()
	fmt.Fprintf(out, "L %d %d %d %d %s\n", l.Slot, l.Fence, l.Floor, l.Ceiling, l.Incarnation)
	out.Flush()
	tick := time.NewTicker(time.Millisecond) // a steady rate, not a synchronisation
	defer tick.Stop()
	for issuing := true; issuing; {
		select {
		case <-stop:
			issuing = false
			continue
		case <-tick.C:
		}
		for range 10 {
			id, err := g.NextID(ctx)
			if err != nil {
				fmt.Fprintf(out, "E next: %v\n", strings.ReplaceAll(err.Error(), "\n", " "))
				out.Flush()
				<-stop
				issuing = false
				break
			}
			fmt.Fprintln(out, id)
		}
		out.Flush() // a SIGKILL loses at most this tick's IDs
	}
	if err := g.Close(context.Background()); err != nil {
		fmt.Fprintf(out, "E close: %v\n", err)
	}
	return 0
}

// proc is a running child and what it printed.
type proc struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // its output ended

	mu    sync.Mutex
	ids   []int64
	lease string
	errs  []string
}

func (p *proc) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ids)
}

func (p *proc) failed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.errs) > 0
}

// start starts a child of the test named test with s.
func start(t *testing.T, test, name string, s settings) *proc {
	t.Helper()
	enc, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	p.cmd.Env = append(os.Environ(), childEnv+"="+string(enc))
	p.cmd.Stderr = os.Stderr
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		_ = p.cmd.Wait()
	})
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			switch {
			case strings.HasPrefix(line, "L "):
				p.lease = line[2:]
			case strings.HasPrefix(line, "E "):
				p.errs = append(p.errs, line[2:])
			default:
				if id, err := strconv.ParseInt(line, 10, 64); err == nil {
					p.ids = append(p.ids, id)
				} else {
					p.errs = append(p.errs, "unreadable line "+strconv.Quote(line))
				}
			}
			p.mu.Unlock()
		}
	}()
	return p
}

// issued waits until p printed n IDs in all, or an error.
func (p *proc) issued(t *testing.T, n int) {
	t.Helper()
	poll.Until(t, 60*time.Second, fmt.Sprintf("%s issues %d IDs", p.name, n), func() bool {
		return p.count() >= n || p.failed()
	})
}

// stop closes p's stdin and waits for it to exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Errorf("%s did not exit within 30s of being told to stop", p.name)
	}
}

// Run runs the scenarios on the store that driverName and options open
// (every process opens it the same way), in namespaces named after them.
// test is the name of the calling top-level test, which must call Child
// first.
func Run(t *testing.T, test, driverName string, options map[string]string) {
	const n = 2000 // IDs a process issues before the next step: 0.2s at its rate
	at := func(ns string, limit int, reclaim bool, skew int64) settings {
		return settings{Driver: driverName, Options: options, NS: ns, Limit: limit, Reclaim: reclaim, SkewMs: skew}
	}
	t.Run("TwoAtOnce", func(t *testing.T) {
		// Two pods given one name at once (a StatefulSet's rollout, a
		// copied manifest): the second must get a slot of its own.
		a := start(t, test, "a", at("two", 2, false, 0))
		a.issued(t, n)
		b := start(t, test, "b", at("two", 2, false, 0))
		b.issued(t, n)
		a.issued(t, a.count()+n) // both issue at once
		check(t, a, b)
	})
	t.Run("RestartWhileRunning", func(t *testing.T) {
		// The restarted pod starts before the old one stopped, and takes
		// its slot over (Reclaim): it starts above the old term's ceiling.
		a := start(t, test, "a", at("restart", 1, true, 0))
		a.issued(t, n)
		b := start(t, test, "b", at("restart", 1, true, 0))
		b.issued(t, n)
		check(t, a, b)
	})
	t.Run("CrashRestartClockBehind", func(t *testing.T) {
		// The pod crashes and comes back at once on a host whose clock is
		// 2s behind: it must not reuse the crashed run's timestamps.
		a := start(t, test, "a", at("crash", 1, true, 0))
		a.issued(t, 30000) // 3s at least: the clock behind lands within its run
		if err := a.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-a.done
		b := start(t, test, "b", at("crash", 1, true, 2000))
		b.issued(t, n)
		check(t, a, b)
	})
}

// check stops the processes and fails t on an ID printed twice, or on a
// process that issued too little to prove anything.
func check(t *testing.T, ps ...*proc) {
	t.Helper()
	seen := map[int64]string{}
	dups := 0
	for _, p := range ps {
		p.stop(t)
		p.mu.Lock()
		t.Logf("%s: %d IDs, lease (slot fence floor ceiling incarnation) %s, errors %q", p.name, len(p.ids), p.lease, p.errs)
		if len(p.ids) < 1000 {
			t.Errorf("%s issued %d IDs, too few to prove anything (errors: %q)", p.name, len(p.ids), p.errs)
		}
		for _, id := range p.ids {
			if _, ok := seen[id]; ok {
				dups++
			}
			seen[id] = p.name
		}
		p.mu.Unlock()
	}
	if dups > 0 {
		t.Errorf("%d IDs issued twice by processes with the same owner %q and label %q", dups, Owner, Label)
	}
}
