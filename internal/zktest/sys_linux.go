//go:build linux

package zktest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// procAttr makes the kernel SIGKILL the JVM when the test binary dies, even
// when no cleanup runs (a test timeout panics and exits at once). The signal
// follows the OS thread that started the JVM; the Go runtime only retires
// threads locked by LockOSThread, which this package never does.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// markedProcesses returns the pids of live processes whose command line has
// the owner mark of the test binary owner.
func markedProcesses(owner int) []int {
	mark := []byte("-D" + ownerProp + "=" + strconv.Itoa(owner) + "\x00")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// A zombie's cmdline is empty, so reaped-to-be JVMs do not count.
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, mark) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func killPid(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }
