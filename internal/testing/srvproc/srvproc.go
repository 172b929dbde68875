// Package srvproc runs the server processes of the test helpers (zktest's
// JVMs, pgtest's postmasters): each started with its output appended to a
// log file after a launch line, tracked until it has exited and been
// reaped, halted with a grace period, and, when the tests end, killed and
// listed if it still runs: no server may outlive the test binary. The
// scaffold the helpers share lives here too: a binary's shared server
// (Shared, Wrap) and a database server across its runs (Instance: free
// port, launch until it answers, kill, stop, restart).
//
// It is a test helper: import it from test helpers only.
package srvproc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one run of a server program.
type Process struct {
	cmd  *exec.Cmd
	spec Spec
	desc string
	kill func(pid int)
	done chan struct{} // closed once it has exited and been reaped
	err  error         // its exit status, once done is closed
}

// live holds every process this binary started and has not reaped.
var live struct {
	sync.Mutex
	procs map[*Process]struct{}
}

// Spec says how Start runs a server program.
type Spec struct {
	Helper string // the helper that starts it ("zktest"): Reap(Helper) finds it
	Log    string // the log file its output is appended to
	Marker string // the start of the line written before each run's output
	// Desc describes it for messages, given its pid.
	Desc func(pid int) string
	// Kill kills it at once; nil: SIGKILL to the process.
	Kill func(pid int)
}

// Start starts cmd with its output appended to spec.Log, after a line
// spec.Marker and the time, and tracks it until it exits.
func Start(cmd *exec.Cmd, spec Spec) (*Process, error) {
	logf, err := os.OpenFile(spec.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logf, "%s%s\n", spec.Marker, time.Now().Format("15:04:05.000"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	p := &Process{cmd: cmd, spec: spec, desc: spec.Desc(cmd.Process.Pid), kill: spec.Kill, done: make(chan struct{})}
	if p.kill == nil {
		// os.Process knows when it was reaped: no signal to a reused pid.
		p.kill = func(int) { _ = cmd.Process.Kill() }
	}
	live.Lock()
	if live.procs == nil {
		live.procs = map[*Process]struct{}{}
	}
	live.procs[p] = struct{}{}
	live.Unlock()
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		live.Lock()
		delete(live.procs, p)
		live.Unlock()
		close(p.done)
	}()
	return p, nil
}

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Err is the exit status, once Done is closed.
func (p *Process) Err() error { return p.err }

// Signal sends sig to the process.
func (p *Process) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Pause stops the process (SIGSTOP) with its sockets open and returns once
// every thread of it has stopped, it has exited, or d has passed (the
// caller's own checks then say what went wrong). The kill returns before
// the threads stop: on a loaded machine a thread may still answer a
// request meanwhile, and a test that froze a server would see it answer.
func (p *Process) Pause(d time.Duration) {
	if p.Signal(syscall.SIGSTOP) != nil {
		return // it has exited
	}
	dir := fmt.Sprintf("/proc/%d/task", p.Pid())
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		tasks, err := os.ReadDir(dir)
		if err != nil {
			return // gone, or no /proc
		}
		stopped := true
		for _, task := range tasks {
			stat, err := os.ReadFile(filepath.Join(dir, task.Name(), "stat"))
			if err != nil {
				continue // the thread ended
			}
			// The state follows the command's closing parenthesis.
			if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || (stat[i+2] != 'T' && stat[i+2] != 't') {
				stopped = false
				break
			}
		}
		if stopped {
			return
		}
	}
}

// Halt stops the process and waits until it has exited: at once with
// SIGKILL, otherwise with sig, killed once grace has passed (ignored, if
// set, is told then).
func (p *Process) Halt(sig syscall.Signal, grace time.Duration, ignored func()) {
	if sig == syscall.SIGKILL {
		p.kill(p.cmd.Process.Pid)
		<-p.done
		return
	}
	_ = p.Signal(sig) // an error means it has exited: done closes soon
	select {
	case <-p.done:
		return
	case <-time.After(grace):
		if ignored != nil {
			ignored()
		}
		p.kill(p.cmd.Process.Pid)
	}
	<-p.done
}

// LastRun returns the log at path from the latest marker line on.
func LastRun(path, marker string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if i := bytes.LastIndex(b, []byte(marker)); i >= 0 {
		b = b[i:]
	}
	return string(b)
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Reap kills every process of helper still running and describes each,
// sorted.
func Reap(helper string) []string {
	live.Lock()
	var procs []*Process
	for p := range live.procs {
		if p.spec.Helper == helper {
			procs = append(procs, p)
		}
	}
	live.Unlock()
	var left []string
	for _, p := range procs {
		p.kill(p.cmd.Process.Pid)
		<-p.done
		left = append(left, p.desc)
	}
	sort.Strings(left)
	return left
}

// Report prints, for helper (e.g. "zktest") whose servers are of kind
// (e.g. "ZooKeeper"), the servers found still running after the tests,
// and returns the test binary's exit code: code, or 1 if any was left.
func Report(helper, kind string, code int, left []string) int {
	if len(left) == 0 {
		return code
	}
	fmt.Fprintf(os.Stderr, "%s: FAIL: %d %s server(s) were still running after the tests (killed now):\n", helper, len(left), kind)
	for _, d := range left {
		fmt.Fprintf(os.Stderr, "\t%s\n", d)
	}
	if code == 0 {
		code = 1
	}
	return code
}
