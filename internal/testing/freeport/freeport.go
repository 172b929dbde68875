// Package freeport hands out loopback ports for the servers the tests
// start (ZooKeeper, PostgreSQL).
package freeport

import (
	"errors"
	"fmt"
	"net"
	"sync"
)

// Ports handed out in this process. A listener on port 0 may get the same
// port twice while the first server has not bound it yet; remembering them
// rules out that collision between servers of one test binary, whichever
// helper starts them.
var ports struct {
	sync.Mutex
	used map[int]bool
}

// Get returns a loopback port nobody listened on a moment ago and that this
// process has not handed out before. Another process may take it before the
// server binds it; the starters retry on a bind failure.
func Get() (int, error) {
	ports.Lock()
	defer ports.Unlock()
	if ports.used == nil {
		ports.used = map[int]bool{}
	}
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !ports.used[port] {
			ports.used[port] = true
			return port, nil
		}
	}
	return 0, errors.New("find a free port: the kernel keeps returning ports already in use")
}
