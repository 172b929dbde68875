package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cosid-go/store/internal/testing/testcerts"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// secretWord is in every password here; storectl must never print it.
const secretWord = "hunter2-Secret"

// TestSecured: storectl works with digest auth and with TLS, given through
// -o and through a YAML config file, on a server of each version; acl shows
// the ACLs; no output shows a secret.
func TestSecured(t *testing.T) {
	for _, version := range zktest.Versions() {
		t.Run(version, func(t *testing.T) {
			ca := testcerts.NewCA(t, "storectl")
			srv := zktest.StartTLSServer(t, version, ca)
			client := ca.Issue("storectl")
			t.Run("Digest", func(t *testing.T) { testDigestCtl(t, srv.Addr()) })
			t.Run("TLS", func(t *testing.T) {
				testTLSCtl(t, srv.SecureAddr(), map[string]string{
					"tls.caFile": ca.CertFile, "tls.certFile": client.CertFile, "tls.keyFile": client.KeyFile,
				})
			})
		})
	}
}

// zkOptions are the options of a fresh store on addr, plus extra.
func zkOptions(t *testing.T, addr string, extra map[string]string) map[string]string {
	o := map[string]string{
		"connectString": addr, "root": randomRoot(t),
		"sessionTimeout": "10s", "connectionTimeout": "5s", "blockUntilConnectedWait": "20s",
	}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

// ctlFlags writes options as --driver zookeeper -o KEY=VALUE...
func ctlFlags(options map[string]string) []string {
	return storeSpec{driver: "zookeeper", options: options}.flags()
}

// writeYAML writes a config file with one store, "zk", of options.
func writeYAML(t *testing.T, options map[string]string) string {
	var b strings.Builder
	b.WriteString("cosid:\n  stores:\n    zk:\n      type: zookeeper\n      options:\n")
	for k, v := range options {
		fmt.Fprintf(&b, "        %s: %q\n", k, v)
	}
	path := filepath.Join(t.TempDir(), "stores.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// noSecret fails the test if r printed the secret.
func noSecret(t *testing.T, r result) result {
	t.Helper()
	if strings.Contains(r.stdout, secretWord) || strings.Contains(r.stderr, secretWord) {
		t.Fatalf("storectl printed a secret\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	return r
}

func testDigestCtl(t *testing.T, addr string) {
	opts := zkOptions(t, addr, map[string]string{"auth": "digest:alice:" + secretWord + "1"})
	flags := ctlFlags(opts)
	noSecret(t, ctl(with(args("init"), flags, args("orders", "5"))...)).want(t, exitOK, "orders: initialised at 5")
	noSecret(t, ctl(with(args("inspect"), flags)...)).want(t, exitOK, "orders")
	root := opts["root"]
	r := noSecret(t, ctl(with(args("acl"), flags)...))
	r.want(t, exitOK, root+" ", root+"/range ", root+"/range/orders ")
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if !strings.Contains(line, "digest:alice:") || !strings.HasSuffix(line, ":crwda") {
			t.Errorf("acl line %q: want alice's digest with every permission (the creator ACL)", line)
		}
	}
	var doc []aclJSON
	decodeJSON(t, ctl(with(args("acl", "--json"), flags)...), &doc)
	if len(doc) != 3 || doc[0].Path != root || len(doc[0].ACL) != 1 || doc[0].ACL[0].Scheme != "digest" || doc[0].ACL[0].Perms != "crwda" {
		t.Errorf("acl --json: %+v", doc)
	}

	// The same root under another digest: refused by the server, and the
	// message shows neither password.
	other := zkOptions(t, addr, map[string]string{"root": root, "auth": "digest:mallory:" + secretWord + "2"})
	noSecret(t, ctl(with(args("inspect"), ctlFlags(other))...)).want(t, exitFailed, "not authenticated")
	// acl lists what it may: the root's ACL is readable by nobody else.
	noSecret(t, ctl(with(args("acl"), ctlFlags(other))...)).want(t, exitOK, root, "not authenticated")

	cfg := writeYAML(t, opts)
	noSecret(t, ctl("seal", "--config", cfg, "orders")).want(t, exitOK, "orders: sealed at 5")
	noSecret(t, ctl("acl", "--config", cfg)).want(t, exitOK, root+"/range/orders ", "digest:alice:")
	// A rejected auth fails naming the scheme.
	bad := writeYAML(t, zkOptions(t, addr, map[string]string{"auth": "ldap:" + secretWord}))
	noSecret(t, ctl("inspect", "--config", bad)).want(t, exitFailed, `scheme "ldap"`, "rejected", "auth=***")
}

func testTLSCtl(t *testing.T, addr string, tlsOptions map[string]string) {
	opts := zkOptions(t, addr, tlsOptions)
	flags := ctlFlags(opts)
	ctl(with(args("init"), flags, args("orders", "7"))...).want(t, exitOK, "orders: initialised at 7")
	ctl(with(args("inspect"), flags)...).want(t, exitOK, "orders")
	ctl(with(args("acl"), flags)...).want(t, exitOK, opts["root"]+"/range/orders ", "world:anyone:crwda")
	cfg := writeYAML(t, opts)
	ctl("seal", "--config", cfg, "orders").want(t, exitOK, "orders: sealed at 7")
	ctl("inspect", "--config", cfg, "--json").want(t, exitOK, `"orders"`)
	// Without the tls options the TLS port is refused, clearly.
	plain := zkOptions(t, addr, map[string]string{"root": opts["root"], "blockUntilConnectedWait": "5s"})
	ctl(with(args("inspect"), ctlFlags(plain))...).want(t, exitFailed, "set the tls options")
}

// TestACLUnsupported: acl needs a driver with ACLs.
func TestACLUnsupported(t *testing.T) {
	m := freshMemory(t)
	m.open(t)
	ctl(with(args("acl"), m.flags())...).want(t, exitUsage, "no ACLs")
}
