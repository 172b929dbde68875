package etcd

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cosid-go/store"
)

// TestTLSKeyInOptionNotShown: the PEM of a private key given where its
// file's path belongs (tls.keyFile, a common slip when keys come from a
// secret store) is never shown in the error that refuses it.
func TestTLSKeyInOptionNotShown(t *testing.T) {
	const pem = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIHUNTER2hunter2hunter2hunter2hunter2hunter2\n-----END PRIVATE KEY-----\n"
	cert := filepath.Join(t.TempDir(), "cert.pem")
	if err := os.WriteFile(cert, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []map[string]string{
		{"tls.keyFile": pem},
		{"tls.keyFile": pem, "tls.certFile": cert},
		{"tls.certFile": pem, "tls.keyFile": pem},
		{"tls.caFile": pem},
	} {
		_, err := store.Open("etcd", opts)
		if !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("Open with PEM for a path: %v; want ErrInvalidArgument", err)
			continue
		}
		if strings.Contains(err.Error(), "HUNTER2") || strings.Contains(err.Error(), "PRIVATE KEY") {
			t.Errorf("the error shows the key: %v", err)
		}
	}
	// A path is still named, once.
	_, err := store.Open("etcd", map[string]string{"tls.certFile": cert, "tls.keyFile": "/nonexistent/key.pem"})
	if msg := err.Error(); !errors.Is(err, store.ErrInvalidArgument) || strings.Count(msg, "/nonexistent/key.pem") != 1 || !strings.Contains(msg, "no such file") {
		t.Errorf("Open with a missing key file: %v; want its path, once, and why", err)
	}
}
