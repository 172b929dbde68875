//go:build !linux

package mysqltest

import "syscall"

// Elsewhere the server runs in its own process group, and is only reaped
// through the tracked processes.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
