package zktest

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/internal/testing/testcerts"
)

// tlsDialer dials with a client certificate of pair, trusting ca only.
func tlsDialer(t *testing.T, ca *testcerts.CA, pair testcerts.Pair) zk.Dialer {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(pair.CertFile, pair.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	b, err := os.ReadFile(ca.CertFile)
	if err != nil || !pool.AppendCertsFromPEM(b) {
		t.Fatalf("read CA %s: %v", ca.CertFile, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: "localhost"}
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, cfg)
	}
}

// TestTLSServer: a TLS server serves a client whose certificate its CA
// issued, on 3.8 and 3.9 alike, and refuses one from another CA.
func TestTLSServer(t *testing.T) {
	for _, version := range Versions() {
		t.Run(version, func(t *testing.T) {
			ca := testcerts.NewCA(t, "test")
			srv := StartTLSServer(t, version, ca)
			conn, events, err := zk.Connect([]string{srv.SecureAddr()}, 10*time.Second,
				zk.WithDialer(tlsDialer(t, ca, ca.Issue("client"))), zk.WithLogger(nopLogger{}))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			waitState(t, events, zk.StateHasSession, 20*time.Second)
			if _, err := conn.Create("/tls", []byte("ok"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("create over TLS: %v", err)
			}
			if err := getData(conn, "/tls", "ok"); err != nil {
				t.Fatal(err)
			}

			other := testcerts.NewCA(t, "other")
			d := tlsDialer(t, ca, other.Issue("intruder"))
			c, err := d("tcp", srv.SecureAddr(), 5*time.Second)
			if err == nil {
				// TLS 1.3 reports the server's refusal of the client
				// certificate on the first read.
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				_, err = c.Read(make([]byte, 1))
				c.Close()
			}
			if err == nil {
				t.Fatal("a client certificate from another CA was accepted")
			}
			t.Logf("foreign certificate: %v", err)
		})
	}
}
