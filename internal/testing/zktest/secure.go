package zktest

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/testcerts"
)

// secureConfig is the TLS client port of a server.
type secureConfig struct {
	ca   *testcerts.CA
	cert testcerts.Pair // the server's certificate and key, issued by ca
}

// StartTLSServer starts a standalone server of version like StartServer,
// with a TLS client port (SecureAddr) besides the plaintext one. Its
// certificate is issued by ca, and it accepts only clients whose
// certificate ca issued (ssl.clientAuth=need). The keystore and truststore
// are PEM files, which both 3.8 and 3.9 read (ssl.*.type=PEM); the TLS
// port runs on Netty, the only connection factory that serves TLS.
func StartTLSServer(t testing.TB, version string, ca *testcerts.CA) *Server {
	t.Helper()
	if addr := strings.TrimSpace(os.Getenv(envServers)); addr != "" {
		t.Fatalf("zktest: StartTLSServer needs a server started by the tests, but %s=%s points at an existing one; unset %s to run this test",
			envServers, addr, envServers)
	}
	// A classpath written before the install script added Netty's codec
	// jar would start a server whose TLS port dies at its first client.
	if cp, err := classpath(version); err == nil && !strings.Contains(cp, "netty-codec") {
		t.Fatalf("zktest: the classpath of ZooKeeper %s has no netty-codec jar, which its TLS port needs; %s", version, installHint)
	}
	s := startServer(t, version, &secureConfig{ca: ca, cert: ca.Issue("zookeeper-server")})
	if err := s.waitSecure(startTimeout); err != nil {
		s.halt(syscall.SIGKILL)
		t.Fatal(s.failure("does not listen on its TLS port", err))
	}
	return s
}

// waitSecure waits until the TLS port, if the server has one, accepts
// connections. srvr answered on the plaintext port; the TLS port opens
// with it, but is checked on its own so a test never races its listener.
func (s *Server) waitSecure(timeout time.Duration) error {
	if s.secure == nil {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", s.SecureAddr(), time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(pollInterval)
	}
}

// SecureAddr returns the TLS client address, "127.0.0.1:port", or "" for a
// server without one.
func (s *Server) SecureAddr() string {
	if s.securePort == 0 {
		return ""
	}
	return "127.0.0.1:" + strconv.Itoa(s.securePort)
}

// writeSecureConfig adds the TLS client port to zoo.cfg. Unknown zoo.cfg
// keys become "zookeeper."-prefixed system properties, which is how the
// ssl.* and authProvider.* settings reach the server.
func (s *Server) writeSecureConfig(b *strings.Builder) {
	if s.secure == nil {
		return
	}
	b.WriteString("serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n")
	fmt.Fprintf(b, "secureClientPort=%d\nsecureClientPortAddress=127.0.0.1\n", s.securePort)
	fmt.Fprintf(b, "ssl.keyStore.location=%s\nssl.keyStore.type=PEM\n", s.secure.cert.Combined)
	fmt.Fprintf(b, "ssl.trustStore.location=%s\nssl.trustStore.type=PEM\n", s.secure.ca.CertFile)
	b.WriteString("ssl.clientAuth=need\n")
	// Without an x509 provider the Netty factory closes every TLS
	// connection once the handshake is done.
	b.WriteString("authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n")
}
