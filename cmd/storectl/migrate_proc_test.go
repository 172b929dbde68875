package main

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The tests that signal, stop or kill a migrate part-way run the storectl
// binary and read its output as it comes.

// sqlitePair names a source and a target SQLite store in a fresh directory.
func sqlitePair(t *testing.T) (src, dst storeSpec) {
	dir := t.TempDir()
	return storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(dir, "src.db")}},
		storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(dir, "dst.db")}}
}

// migrating is a storectl migrate process.
type migrating struct {
	cmd    *exec.Cmd
	lines  *bufio.Scanner   // its stdout
	out    strings.Builder  // the stdout read so far
	stderr *strings.Builder // all of its stderr
}

// startMigrate starts storectl migrate from src to dst, killed if it runs
// longer than timeout, and reads its stdout up to and including the first
// line that starts with upTo (the report of a key moved).
func startMigrate(t *testing.T, src, dst storeSpec, timeout time.Duration, upTo string) *migrating {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	m := &migrating{stderr: new(strings.Builder)}
	m.cmd = exec.CommandContext(ctx, storectlBinary(t), "migrate", "--from", src.spec(), "--to", dst.spec())
	stdout, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	m.cmd.Stderr = m.stderr
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m.lines = bufio.NewScanner(stdout)
	for m.scan() {
		if strings.HasPrefix(m.lines.Text(), upTo) {
			break
		}
	}
	return m
}

// scan reads the next line of stdout, keeping it in out.
func (m *migrating) scan() bool {
	if !m.lines.Scan() {
		return false
	}
	m.out.WriteString(m.lines.Text() + "\n")
	return true
}

// finish reads the rest of stdout and waits for the process to end.
func (m *migrating) finish() error {
	for m.scan() {
	}
	return m.cmd.Wait()
}
