package zookeeper

import (
	"fmt"
	"strings"
)

// Format prints the store as "zookeeper store root=... servers=...", for
// every verb: fmt's %+v and %#v would otherwise print its fields, the auth
// option's credentials among them.
func (s *driverStore) Format(f fmt.State, verb rune) {
	servers := "caller's connection"
	if s.owned {
		servers = strings.Join(s.cfg.servers, ",")
	}
	fmt.Fprintf(f, "zookeeper store root=%s servers=%s", s.root, servers)
}
