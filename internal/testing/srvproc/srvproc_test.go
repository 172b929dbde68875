package srvproc

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func start(t *testing.T, helper, log string, args ...string) *Process {
	t.Helper()
	p, err := Start(exec.Command(args[0], args[1:]...), Spec{Helper: helper, Log: log, Marker: "=== run ",
		Desc: func(pid int) string { return helper + " " + args[0] }})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReapKillsOnlyItsHelpers: Reap kills and lists the processes of its
// helper that still run, and leaves another helper's alone.
func TestReapKillsOnlyItsHelpers(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	a := start(t, "a", log, "sleep", "60")
	b := start(t, "b", log, "sleep", "60")
	defer b.Halt(syscall.SIGKILL, 0, nil)
	if left := Reap("a"); !slices.Equal(left, []string{"a sleep"}) {
		t.Errorf("Reap(a) = %q, want the one process of a", left)
	}
	select {
	case <-a.Done():
	default:
		t.Error("a's process still runs after Reap")
	}
	select {
	case <-b.Done():
		t.Error("Reap(a) ended b's process")
	default:
	}
}

// TestHaltKillsAfterGrace: a process that ignores the signal is killed
// once the grace period has passed, and the caller is told.
func TestHaltKillsAfterGrace(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	p := start(t, "c", log, "sh", "-c", `trap "" TERM; echo ready; while :; do sleep 1; done`)
	for !strings.Contains(LastRun(log, "=== run "), "ready") { // the trap is set
		select {
		case <-p.Done():
			t.Fatalf("exited: %v", p.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	ignored := false
	p.Halt(syscall.SIGTERM, 200*time.Millisecond, func() { ignored = true })
	if !ignored {
		t.Error("the ignored SIGTERM was not reported")
	}
}

// TestLastRun: the log of the latest run only, its last lines.
func TestLastRun(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	for _, word := range []string{"first", "second"} {
		p := start(t, "d", log, "echo", word)
		<-p.Done()
	}
	got := LastRun(log, "=== run ")
	if !strings.HasPrefix(got, "=== run ") || strings.Contains(got, "first") || !strings.Contains(got, "second") {
		t.Errorf("LastRun = %q, want the second run's log", got)
	}
	if tail := Tail(got, 1); tail != "second" {
		t.Errorf("Tail(1) = %q, want second", tail)
	}
}
