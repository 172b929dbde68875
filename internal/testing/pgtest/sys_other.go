//go:build !linux

package pgtest

import "syscall"

// Elsewhere the server runs as the current user, in its own process group,
// and is only reaped through the tracked processes.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func chownToServerUser(string) error { return nil }

// children is unknown here: only the postmaster is killed.
func children(int) []int { return nil }
