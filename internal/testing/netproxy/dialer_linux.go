package netproxy

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DialedBy returns which of pids opened c, a loopback connection the proxy
// accepted: the process holding the socket at c's other end, found in the
// kernel's socket table (/proc), so whatever the dialer sends is no part of
// the answer. An error when none of them holds it (it may be closed already).
func DialedBy(c net.Conn, pids ...int) (int, error) {
	remote, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("netproxy: %v is not a TCP connection", c.RemoteAddr())
	}
	inode, err := socketInode(remote.Port, local.Port)
	if err != nil {
		return 0, err
	}
	link := "socket:[" + inode + "]"
	for _, pid := range pids {
		fds := filepath.Join("/proc", strconv.Itoa(pid), "fd")
		ents, err := os.ReadDir(fds)
		if err != nil {
			continue // gone
		}
		for _, e := range ents {
			if l, err := os.Readlink(filepath.Join(fds, e.Name())); err == nil && l == link {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("netproxy: none of pids %v holds the socket dialing %v from %v", pids, local, remote)
}

// socketInode finds the inode of the socket whose local port is lport and
// remote port rport (both ends are on loopback), in /proc/net/tcp{,6}.
func socketInode(lport, rport int) (string, error) {
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the heading
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 || fs[9] == "0" {
				continue // closed sockets (TIME_WAIT) have no inode
			}
			if hexPort(fs[1]) == lport && hexPort(fs[2]) == rport {
				f.Close()
				return fs[9], nil
			}
		}
		f.Close()
	}
	return "", fmt.Errorf("netproxy: no open socket from port %d to port %d", lport, rport)
}

// hexPort reads the port of an address as the socket table writes it,
// "0100007F:1F90".
func hexPort(addr string) int {
	_, h, ok := strings.Cut(addr, ":")
	if !ok {
		return -1
	}
	n, err := strconv.ParseUint(h, 16, 16)
	if err != nil {
		return -1
	}
	return int(n)
}
