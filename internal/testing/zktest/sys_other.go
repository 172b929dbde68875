//go:build !linux

package zktest

import "syscall"

// Elsewhere the JVMs are only reaped through the tracked processes: there is
// no parent-death signal and no /proc to scan.

func procAttr() *syscall.SysProcAttr { return nil }

func markedProcesses(int) []int { return nil }

func killPid(int) {}

func cpuTicks(int) int64 { return -1 }
