package etcdtest

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/testcerts"
)

// tlsSetup is how a cluster's members serve clients over TLS.
type tlsSetup struct {
	ca     *testcerts.CA
	server testcerts.Pair // every member's certificate (SANs 127.0.0.1, localhost)
	client testcerts.Pair // the harness's own, for /health
}

// StartTLS starts an n-member cluster like Start whose members serve
// clients over TLS only (https:// client URLs): their certificate is issued
// by ca, and they accept only clients whose certificate ca issued
// (--client-cert-auth). Peers speak plaintext to each other.
func StartTLS(t testing.TB, n int, ca *testcerts.CA) *Cluster {
	t.Helper()
	return start(t, n, &tlsSetup{ca: ca, server: ca.Issue("etcd-server"), client: ca.Issue("etcdtest")})
}

func (c *Cluster) scheme() string {
	if c.tls != nil {
		return "https"
	}
	return "http"
}

func (c *Cluster) tlsArgs() []string {
	if c.tls == nil {
		return nil
	}
	return []string{
		"--cert-file", c.tls.server.CertFile, "--key-file", c.tls.server.KeyFile,
		"--trusted-ca-file", c.tls.ca.CertFile, "--client-cert-auth",
	}
}

// httpClient is the client the harness speaks HTTP to members with: with
// a certificate of the cluster's CA on a TLS cluster.
func (c *Cluster) httpClient() *http.Client {
	client := &http.Client{Timeout: 2 * time.Second}
	if c.tls == nil {
		return client
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: x509.NewCertPool()}
	// The files were written by testcerts a moment ago: a failure to read
	// them back fails /health, whose error says why.
	if pem, err := os.ReadFile(c.tls.ca.CertFile); err == nil {
		cfg.RootCAs.AppendCertsFromPEM(pem)
	}
	if pair, err := tls.LoadX509KeyPair(c.tls.client.CertFile, c.tls.client.KeyFile); err == nil {
		cfg.Certificates = []tls.Certificate{pair}
	}
	client.Transport = &http.Transport{TLSClientConfig: cfg}
	return client
}
