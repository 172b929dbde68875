// Package testcerts makes certificates at run time for the tests of TLS:
// a CA per test and certificates it issues, written to PEM files in the
// test's temporary directory. Nothing is checked in, and every test gets
// keys of its own.
//
// It is a test helper: import it from _test.go files only.
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority made at run time for one test.
type CA struct {
	t    testing.TB
	name string
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CertFile is the CA certificate, PEM.
	CertFile string
}

// NewCA makes a CA named name and writes its certificate to a file in a
// temporary directory of t.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("testcerts: make CA %s: %v", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testcerts: parse CA %s: %v", name, err)
	}
	ca := &CA{t: t, name: name, dir: t.TempDir(), cert: cert, key: key}
	ca.CertFile = ca.write(name+"-ca.pem", pemBlock("CERTIFICATE", der))
	return ca
}

// Pair is a certificate and its private key, each in a PEM file.
type Pair struct {
	CertFile string
	KeyFile  string
	// Combined holds the certificate then the key, the PEM keystore layout
	// ZooKeeper reads.
	Combined string
}

// Issue makes a certificate for cn, valid for both TLS ends on loopback
// (SANs 127.0.0.1 and localhost), signed by the CA; the key is PKCS#8.
func (ca *CA) Issue(cn string) Pair {
	ca.t.Helper()
	key := newKey(ca.t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(ca.t),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatalf("testcerts: issue %s: %v", cn, err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		ca.t.Fatalf("testcerts: encode key of %s: %v", cn, err)
	}
	certPEM, keyPEM := pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", pkcs8)
	base := ca.name + "-" + cn
	return Pair{
		CertFile: ca.write(base+".pem", certPEM),
		KeyFile:  ca.write(base+".key", keyPEM),
		Combined: ca.write(base+"-combined.pem", append(append([]byte{}, certPEM...), keyPEM...)),
	}
}

func (ca *CA) write(name string, data []byte) string {
	path := filepath.Join(ca.dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		ca.t.Fatalf("testcerts: %v", err)
	}
	return path
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testcerts: generate key: %v", err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatalf("testcerts: serial number: %v", err)
	}
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
