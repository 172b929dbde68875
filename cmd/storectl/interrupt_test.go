package main

import (
	"bufio"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// interruptAt runs storectl with argv, sends SIGINT once it has printed a
// line starting with at, and wants it to exit with exitInterrupted. It
// returns how many lines it printed before the signal plus those after it
// that start with counted (each a thing done), and its stderr. The signal
// lands mid-run: the test stops reading at that line, and the command
// blocks on its full output pipe meanwhile.
func interruptAt(t *testing.T, argv []string, at, counted string) (done int, stderr string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), storectlBinary(t), argv...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errs strings.Builder
	cmd.Stderr = &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		done++
		if strings.HasPrefix(lines.Text(), at) {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), counted) {
			done++
		}
	}
	err = cmd.Wait()
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("%s after SIGINT: %v, want exit code %d\n%s", argv[0], err, exitInterrupted, errs.String())
	}
	return done, errs.String()
}
