package zookeeper

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/google/go-cmp/cmp"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/testcerts"
)

// secretWord is in every credential these tests pass; no error may show it.
const secretWord = "hunter2-Secret"

// TestSecurityOptionErrors: bad auth, acl and tls values are refused,
// naming the option, and an auth value is never shown.
func TestSecurityOptionErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pem")
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		options map[string]string
		want    []string // substrings of the error
	}{
		{map[string]string{"auth": "digest" + secretWord}, []string{`"auth"`, "entry 1", "scheme:credentials"}},
		{map[string]string{"auth": "digest:alice:" + secretWord + ",:" + secretWord}, []string{`"auth"`, "entry 2"}},
		{map[string]string{"auth": "digest:" + secretWord}, []string{`"auth"`, `scheme "digest"`, "digest:user:password"}},
		{map[string]string{"auth": "digest:alice:"}, []string{`"auth"`, "digest:user:password"}},
		{map[string]string{"auth": "ip:"}, []string{`"auth"`, "no credentials"}},
		{map[string]string{"auth": ""}, []string{`"auth"`, "entry 1"}},
		{map[string]string{"auth": "digest:a:" + secretWord, "blockUntilConnectedWait": "0"}, []string{`"blockUntilConnectedWait"`, "auth"}},
		{map[string]string{"acl": "creator"}, []string{`"acl"`, "authenticated", "auth"}},
		{map[string]string{"acl": "world:anyone"}, []string{`"acl"`, "entry 1", "scheme:id:perms"}},
		{map[string]string{"acl": "world:anyone:rwx"}, []string{`"acl"`, "'x'", "crwda"}},
		{map[string]string{"acl": "world:anyone:r,ip::r"}, []string{`"acl"`, "entry 2"}},
		{map[string]string{"acl": "world:anyone:"}, []string{`"acl"`, "no permissions"}},
		{map[string]string{"tls": "yes please"}, []string{`"tls"`, "boolean"}},
		{map[string]string{"tls": "false", "tls.serverName": "zk"}, []string{`"tls"`, "tls is off"}},
		{map[string]string{"tls.caFile": missing}, []string{`"tls.caFile"`, "missing.pem", "no such file"}},
		{map[string]string{"tls.caFile": notPEM}, []string{`"tls.caFile"`, "no PEM certificate"}},
		{map[string]string{"tls.certFile": notPEM}, []string{`"tls.certFile"`, "needs tls.keyFile"}},
		{map[string]string{"tls.keyFile": notPEM}, []string{`"tls.keyFile"`, "needs tls.certFile"}},
		{map[string]string{"tls.certFile": notPEM, "tls.keyFile": notPEM}, []string{`"tls.certFile"`, "tls.keyFile"}},
	} {
		_, err := openWith(c.options)
		if err == nil {
			t.Errorf("openWith(%v) succeeded, want an error", c.options)
			continue
		}
		if !errors.Is(err, driver.ErrInvalidArgument) {
			t.Errorf("openWith(%v): %v, want ErrInvalidArgument", c.options, err)
		}
		msg := err.Error()
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("openWith(%v): error %q does not mention %s", c.options, msg, w)
			}
		}
		if strings.Contains(msg, secretWord) {
			t.Errorf("openWith(%v): error %q shows the secret", c.options, msg)
		}
	}
}

// TestSecurityOptionValues: what auth and acl parse to, and the acl
// defaults (creator with auth, open without).
func TestSecurityOptionValues(t *testing.T) {
	all := int32(zk.PermAll)
	for _, c := range []struct {
		options map[string]string
		auth    []string // scheme:credentials
		acl     []zk.ACL
	}{
		{nil, nil, zk.WorldACL(all)},
		{map[string]string{"auth": "digest:alice:s"}, []string{"digest:alice:s"}, zk.AuthACL(all)},
		{map[string]string{"auth": " digest:alice:s:with:colons , ip:x"}, []string{"digest:alice:s:with:colons", "ip:x"}, zk.AuthACL(all)},
		{map[string]string{"auth": "digest:alice:s", "acl": "open"}, []string{"digest:alice:s"}, zk.WorldACL(all)},
		{map[string]string{"acl": "open"}, nil, zk.WorldACL(all)},
		{map[string]string{"auth": "digest:alice:s", "acl": "creator"}, []string{"digest:alice:s"}, zk.AuthACL(all)},
		{
			map[string]string{"acl": "digest:alice:abc=:crwda, world:anyone:r,ip:fe80::1:rw"}, nil,
			[]zk.ACL{
				{Scheme: "digest", ID: "alice:abc=", Perms: all},
				{Scheme: "world", ID: "anyone", Perms: zk.PermRead},
				{Scheme: "ip", ID: "fe80::1", Perms: zk.PermRead | zk.PermWrite},
			},
		},
	} {
		cfg, err := parseOptions(c.options, true)
		if err != nil {
			t.Errorf("parseOptions(%v): %v", c.options, err)
			continue
		}
		var auth []string
		for _, a := range cfg.sec.auth {
			auth = append(auth, a.scheme+":"+string(a.cred))
		}
		if diff := cmp.Diff(c.auth, auth); diff != "" {
			t.Errorf("parseOptions(%v) auth (-want +got):\n%s", c.options, diff)
		}
		if diff := cmp.Diff(c.acl, cfg.sec.acl); diff != "" {
			t.Errorf("parseOptions(%v) acl (-want +got):\n%s", c.options, diff)
		}
		if cfg.sec.tls != nil {
			t.Errorf("parseOptions(%v): TLS on", c.options)
		}
	}
}

// TestSecretsNotShown: the String of an auth entry and of the parsed
// configuration, and New's refusal of auth, never show the credentials.
func TestSecretsNotShown(t *testing.T) {
	cfg, err := parseOptions(map[string]string{"auth": "digest:alice:" + secretWord}, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprint(cfg.sec.auth[0]), fmt.Sprintf("%v", cfg.sec.auth), fmt.Sprintf("%+v", cfg.sec.auth)} {
		if strings.Contains(s, secretWord) || strings.Contains(s, "alice") || !strings.Contains(s, "digest") {
			t.Errorf("auth entry printed as %q: want the scheme only", s)
		}
	}
	conn := deadConn(t)
	for _, k := range securityConnectionOptions {
		_, err := newOnConn(conn, map[string]string{k: "digest:alice:" + secretWord})
		if !errors.Is(err, driver.ErrInvalidArgument) || !strings.Contains(err.Error(), k) {
			t.Errorf("New with %s: %v, want ErrInvalidArgument naming it", k, err)
		}
		if err != nil && strings.Contains(err.Error(), secretWord) && k == optAuth {
			t.Errorf("New with auth: error %q shows the secret", err)
		}
	}
	// acl applies to New: the caller's connection may carry auth.
	s, err := newOnConn(conn, map[string]string{"acl": "creator"})
	if err != nil {
		t.Fatalf("New with acl=creator: %v", err)
	}
	if diff := cmp.Diff(zk.AuthACL(zk.PermAll), s.acl); diff != "" {
		t.Errorf("New acl (-want +got):\n%s", diff)
	}
	s.Close()
}

// TestTLSKeyPastedNotShown: a private key pasted into tls.keyFile instead
// of its path is refused without being printed, whichever option the error
// names.
func TestTLSKeyPastedNotShown(t *testing.T) {
	pair := testcerts.NewCA(t, "pasted").Issue("client")
	key, err := os.ReadFile(pair.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(key)), "\n")
	material := lines[1][:16] // from the key's base64 body
	for _, opts := range []map[string]string{
		{"tls.keyFile": string(key)},
		{"tls.certFile": pair.CertFile, "tls.keyFile": string(key)},
		{"tls.caFile": string(key)},
	} {
		_, err := openWith(opts)
		if !errors.Is(err, driver.ErrInvalidArgument) {
			t.Errorf("openWith(%v): %v, want ErrInvalidArgument", opts, err)
			continue
		}
		if strings.Contains(err.Error(), material) {
			t.Errorf("the refusal shows the pasted key: %v", err)
		}
	}
}

// TestTLSOptionValues: the tls.* files are loaded by Open's option check,
// and TLS is on when any of them is given or tls=true.
func TestTLSOptionValues(t *testing.T) {
	ca := testcerts.NewCA(t, "opts")
	pair := ca.Issue("client")
	cfg, err := parseOptions(map[string]string{
		"tls.caFile": ca.CertFile, "tls.certFile": pair.CertFile, "tls.keyFile": pair.KeyFile, "tls.serverName": "zk.example",
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.sec.tls
	if c == nil || c.RootCAs == nil || len(c.Certificates) != 1 || c.ServerName != "zk.example" {
		t.Fatalf("TLS config %+v: want the CA, one client certificate and the server name", c)
	}
	// A client certificate makes the session authenticated (x509), so
	// creator is accepted without auth.
	if _, err := parseOptions(map[string]string{"tls.certFile": pair.CertFile, "tls.keyFile": pair.KeyFile, "acl": "creator"}, true); err != nil {
		t.Errorf("acl=creator with a client certificate: %v", err)
	}
	cfg, err = parseOptions(map[string]string{"tls": "true"}, true)
	if err != nil || cfg.sec.tls == nil || cfg.sec.tls.RootCAs != nil {
		t.Errorf("tls=true: %v, %+v: want TLS with the system roots", err, cfg.sec.tls)
	}
}

// TestPermString: permissions print as ZooKeeper's letters.
func TestPermString(t *testing.T) {
	for p, want := range map[int32]string{int32(zk.PermAll): "crwda", zk.PermRead: "r", zk.PermRead | zk.PermAdmin: "ra", 0: ""} {
		if got := PermString(p); got != want {
			t.Errorf("PermString(%d) = %q, want %q", p, got, want)
		}
	}
}
