package etcdtest

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/testcerts"
)

// TestStartTLS: a TLS member serves /health to the harness's client, which
// shows a certificate its CA issued, and refuses a client that trusts the
// CA but shows none.
func TestStartTLS(t *testing.T) {
	ca := testcerts.NewCA(t, "etcdtest")
	c := StartTLS(t, 1, ca)
	m := c.Members[0]
	if !strings.HasPrefix(m.ClientURL, "https://") {
		t.Fatalf("client URL %s, want https://", m.ClientURL)
	}
	resp, err := m.http.Get(m.ClientURL + "/health")
	if err != nil {
		t.Fatalf("/health with the CA's client certificate: %v", err)
	}
	resp.Body.Close()
	m.http.CloseIdleConnections()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/health: %s", resp.Status)
	}
	pem, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	anon := &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	defer anon.CloseIdleConnections()
	if resp, err := anon.Get(m.ClientURL + "/health"); err == nil {
		resp.Body.Close()
		t.Errorf("/health without a client certificate: %s, want refused", resp.Status)
	} else if !strings.Contains(err.Error(), "certificate required") {
		t.Errorf("/health without a client certificate: %v, want the server's certificate required alert", err)
	}
}

// TestEnableAuth: after EnableAuth, the user authenticates with its
// password and with no other, and a read without a token is refused.
func TestEnableAuth(t *testing.T) {
	c := Start(t, 1)
	c.EnableAuth(t, "u", "pw-1")
	m := c.Members[0]
	var out struct {
		Token string `json:"token"`
	}
	if err := post(m, "/v3/auth/authenticate", map[string]string{"name": "u", "password": "pw-1"}, &out, 10*time.Second); err != nil || out.Token == "" {
		t.Errorf("authenticate with the password: token %q, %v", out.Token, err)
	}
	if err := post(m, "/v3/auth/authenticate", map[string]string{"name": "u", "password": "pw-2"}, nil, 10*time.Second); err == nil {
		t.Error("authenticate with another password succeeded")
	}
	if err := post(m, "/v3/kv/range", map[string]string{"key": b64("k")}, nil, 10*time.Second); err == nil {
		t.Error("a read without a token succeeded")
	}
}
