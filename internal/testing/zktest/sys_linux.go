//go:build linux

package zktest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// cpuTicks returns the CPU time (user and system, in clock ticks) that
// process pid has used, or -1 when it cannot be read.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return -1
	}
	// pid (comm) state ppid ... utime stime: fields 14 and 15; comm may
	// hold spaces, so count from the last ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return -1
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	k, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return u + k
}
