package zktest

import (
	"testing"

	"github.com/cosid-go/store/internal/testing/netproxy"
)

// Proxy is a loopback TCP proxy in front of one server, to cut or freeze a
// client's connections on purpose without touching the server.
type Proxy = netproxy.Proxy

// NewProxy forwards a free 127.0.0.1 port to target until the test ends.
func NewProxy(t testing.TB, target string) *Proxy { return netproxy.New(t, target) }
