//go:build linux

package mysqltest

import "syscall"

// procAttr runs a server program in its own process group (away from the
// test binary's signals) and makes the kernel SIGKILL it when the test
// binary dies, even when no cleanup runs.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
