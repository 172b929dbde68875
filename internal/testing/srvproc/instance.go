package srvproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cosid-go/store/internal/testing/freeport"
)

// Bounds, not sleeps: readiness is polled. Generous, for busy machines.
const (
	StartTimeout = time.Minute      // a launch until the server answers
	StopTimeout  = 20 * time.Second // a server told to stop, before it is killed
	PollInterval = 50 * time.Millisecond
)

// Instance is one server of a database helper (pgtest, mysqltest) across
// its runs: its directory (its data, socket and server.log) and port,
// and, while it runs, its Process. A helper's Server keeps one and says
// how to launch it and to tell it answers.
type Instance struct {
	Helper string // "pgtest": the messages', the log marker's and Reap's
	Dir    string
	Port   int
	// Desc describes the server for messages.
	Desc func() string
	// Kill kills a run at once; nil: SIGKILL to the process.
	Kill func(pid int)

	mu   sync.Mutex
	proc *Process // nil when stopped
}

// LogPath is the server's log, every run appended after a marker line.
func (in *Instance) LogPath() string { return filepath.Join(in.Dir, "server.log") }

func (in *Instance) marker() string { return "=== " + in.Helper + ": launch " }

// LogTail returns the last lines of the log since the latest launch.
func (in *Instance) LogTail() string { return Tail(LastRun(in.LogPath(), in.marker()), 30) }

// OnFreePort launches the server on a free port, once more on another if
// the log of the first launch says (taken) someone bound it first.
func (in *Instance) OnFreePort(taken string, launch func() error) error {
	for attempt := 1; ; attempt++ {
		port, err := freeport.Get()
		if err != nil {
			return fmt.Errorf("%s: %w", in.Helper, err)
		}
		in.Port = port
		err = launch()
		if err == nil || attempt > 1 || !strings.Contains(in.LogTail(), taken) {
			return err
		}
	}
}

// Launch starts cmd and waits until ready answers nil (each try bounded
// by 5 s); a server that exits or does not answer within StartTimeout is
// killed, and the error holds its log's tail.
func (in *Instance) Launch(cmd *exec.Cmd, ready func(context.Context) error) error {
	p, err := Start(cmd, Spec{Helper: in.Helper, Log: in.LogPath(), Marker: in.marker(),
		Desc: func(int) string { return in.Desc() }, Kill: in.Kill})
	if err != nil {
		return fmt.Errorf("%s: start %s: %v", in.Helper, filepath.Base(cmd.Path), err)
	}
	in.mu.Lock()
	in.proc = p
	in.mu.Unlock()
	if err := waitReady(p, ready); err != nil {
		in.Halt(syscall.SIGKILL)
		return fmt.Errorf("%s: %s did not start: %v\nlog tail:\n%s", in.Helper, in.Desc(), err, in.LogTail())
	}
	return nil
}

// waitReady polls ready until it answers nil or p exits.
func waitReady(p *Process, ready func(context.Context) error) error {
	deadline := time.Now().Add(StartTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := ready(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-p.Done():
			return errors.New("the server exited")
		case <-time.After(PollInterval):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer within %v: %v", StartTimeout, err)
		}
	}
}

// Running reports whether a run has been launched and not halted.
func (in *Instance) Running() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.proc != nil
}

// Pid is the running server's process id, 0 when none runs.
func (in *Instance) Pid() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.proc == nil {
		return 0
	}
	return in.proc.Pid()
}

// Halt signals the running server (SIGKILL: Kill) and waits until it has
// exited; one that ignores sig is killed after StopTimeout.
func (in *Instance) Halt(sig syscall.Signal) {
	in.mu.Lock()
	p := in.proc
	in.proc = nil
	in.mu.Unlock()
	if p != nil {
		p.Halt(sig, StopTimeout, nil)
	}
}

// Destroy kills the server and deletes its directory.
func (in *Instance) Destroy() {
	in.Halt(syscall.SIGKILL)
	os.RemoveAll(in.Dir)
}
