//go:build linux

package pgtest

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// procAttr runs a server program in its own process group (away from the
// test binary's signals), as the postgres user when the tests run as root
// (the server refuses root), and makes the kernel SIGKILL it when the test
// binary dies, even when no cleanup runs. Go sets the parent-death signal
// after switching user, which would otherwise clear it.
func procAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if uid, gid, ok := serverUser(); ok {
		a.Credential = &syscall.Credential{Uid: uid, Gid: gid}
	}
	return a
}

// serverUser is the postgres user when running as root.
func serverUser() (uid, gid uint32, ok bool) {
	if os.Geteuid() != 0 {
		return 0, 0, false
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return 0, 0, false
	}
	a, _ := strconv.ParseUint(u.Uid, 10, 32)
	b, _ := strconv.ParseUint(u.Gid, 10, 32)
	return uint32(a), uint32(b), true
}

// chownToServerUser gives dir to the server's user.
func chownToServerUser(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	uid, gid, ok := serverUser()
	if !ok {
		return fmt.Errorf("running as root, but there is no postgres user to run the server as; %s", installHint)
	}
	return os.Chown(dir, int(uid), int(gid))
}

// children lists the pids whose parent is pid, from /proc.
func children(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces, so cut at ')'.
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, c)
		}
	}
	return out
}
