package zookeeper

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/leakcheck"
	"github.com/cosid-go/store/internal/testing/testcerts"
	"github.com/cosid-go/store/internal/testing/zktest"
	"github.com/cosid-go/store/tck"
)

// TestTLS runs the TLS checks on one server of each supported version
// with a TLS client port, its certificates made by the test.
func TestTLS(t *testing.T) {
	for _, version := range zktest.Versions() {
		t.Run(version, func(t *testing.T) {
			ca := testcerts.NewCA(t, "cosid-test")
			srv := zktest.StartTLSServer(t, version, ca)
			env := tlsEnv{srv: srv, ca: ca, client: ca.Issue("store")}
			for _, c := range []struct {
				name string
				run  func(t *testing.T, env tlsEnv)
			}{
				{"TCK", testTLSTCK},
				{"ForeignCA", testTLSForeignCA},
				{"PlaintextToTLSPort", testPlaintextToTLSPort},
				{"TLSToPlaintextPort", testTLSToPlaintextPort},
				{"WrongServerName", testTLSWrongServerName},
				{"CreatorByCertificate", testCreatorByCertificate},
				{"NoGoroutineLeft", testTLSNoGoroutineLeft},
			} {
				t.Run(c.name, func(t *testing.T) { c.run(t, env) })
			}
		})
	}
}

type tlsEnv struct {
	srv    *zktest.Server
	ca     *testcerts.CA
	client testcerts.Pair
}

// options are a test store's options on the TLS port, with extra added.
func (e tlsEnv) options(extra map[string]string) map[string]string {
	o := testOptions(e.srv.SecureAddr(), map[string]string{
		"tls.caFile": e.ca.CertFile, "tls.certFile": e.client.CertFile, "tls.keyFile": e.client.KeyFile,
	})
	for k, v := range extra {
		o[k] = v
	}
	return o
}

type tlsHarness struct {
	env  tlsEnv
	root string
}

func (h tlsHarness) NewStore(context.Context) (driver.Store, error) {
	return openWith(h.env.options(map[string]string{"root": h.root}))
}

func (h tlsHarness) Close() error { return nil }

// Restart restarts the TLS server on its data (tck.Restarter).
func (h tlsHarness) Restart(context.Context) error { return restartServer(h.env.srv) }

// testTLSTCK: the whole TCK passes over TLS.
func testTLSTCK(t *testing.T, env tlsEnv) {
	tck.Run(t, tck.Suite{
		NewHarness: func(context.Context, *testing.T) (tck.Harness, error) {
			return tlsHarness{env: env, root: randomRoot()}, nil
		},
		Ranges:    true,
		Slots:     true,
		Locks:     true,
		Factory:   openWith,
		TimeScale: 2,
	})
}

// openFails opens a store that must fail, within its
// blockUntilConnectedWait, with an error containing every one of want.
func openFails(t *testing.T, options map[string]string, want ...string) {
	t.Helper()
	const wait = 8 * time.Second
	options["blockUntilConnectedWait"] = wait.String()
	start := time.Now()
	s, err := openWith(options)
	took := time.Since(start)
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded")
	}
	t.Logf("Open: %v (after %v)", err, took)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	// A little slack past the wait for Close on a loaded machine; a hang
	// would take the connection's own timeouts (minutes).
	if took > wait+5*time.Second {
		t.Errorf("Open took %v, blockUntilConnectedWait is %v", took, wait)
	}
}

// testTLSForeignCA: a client whose certificate another CA issued is
// refused by the server.
func testTLSForeignCA(t *testing.T, env tlsEnv) {
	t.Parallel() // each waits out blockUntilConnectedWait
	other := testcerts.NewCA(t, "other").Issue("intruder")
	openFails(t, env.options(map[string]string{"tls.certFile": other.CertFile, "tls.keyFile": other.KeyFile}),
		env.srv.SecureAddr(), "bad certificate")
}

// testPlaintextToTLSPort: a store without TLS on the TLS port fails with
// an error saying the port speaks TLS, not after a hang.
func testPlaintextToTLSPort(t *testing.T, env tlsEnv) {
	t.Parallel() // each waits out blockUntilConnectedWait
	openFails(t, testOptions(env.srv.SecureAddr(), nil), env.srv.SecureAddr(), "TLS")
}

// testTLSToPlaintextPort: a TLS store on the plaintext port fails naming
// the TLS handshake.
func testTLSToPlaintextPort(t *testing.T, env tlsEnv) {
	t.Parallel() // each waits out blockUntilConnectedWait
	o := env.options(nil)
	o["connectString"] = env.srv.Addr()
	openFails(t, o, env.srv.Addr(), "TLS handshake", "secureClientPort")
}

// testTLSWrongServerName: the server's certificate is checked against
// tls.serverName.
func testTLSWrongServerName(t *testing.T, env tlsEnv) {
	t.Parallel() // each waits out blockUntilConnectedWait
	openFails(t, env.options(map[string]string{"tls.serverName": "zk.elsewhere"}), "zk.elsewhere", "certificate")
}

// testCreatorByCertificate: with acl=creator and no auth, the nodes belong
// to the client certificate's identity (x509): a session without it gets
// NoAuth.
func testCreatorByCertificate(t *testing.T, env tlsEnv) {
	opts := env.options(map[string]string{"acl": "creator"})
	st, err := store.Open("zookeeper", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Ranges().Next(t.Context(), "k", 10); err != nil {
		t.Fatal(err)
	}
	anyone := rawClient(t, env.srv.Addr())
	if _, _, err := anyone.Get(opts["root"] + "/range/k"); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("get by a session without the certificate: %v, want NoAuth", err)
	}
}

// testTLSNoGoroutineLeft: a store with TLS and auth, whose connection is
// cut, and an Open whose auth is rejected, leave no goroutine behind.
func testTLSNoGoroutineLeft(t *testing.T, env tlsEnv) {
	proxy := zktest.NewProxy(t, env.srv.SecureAddr())
	defer leakcheck.VerifyNone(t, goleak.IgnoreCurrent())

	useCutAndClose(t, env.options(map[string]string{"connectString": proxy.Addr(), "auth": "digest:alice:" + newSecret()}), proxy)
	if _, err := openWith(env.options(map[string]string{"auth": "ldap:" + newSecret()})); !errors.Is(err, zk.ErrAuthFailed) {
		t.Errorf("Open with a rejected auth over TLS: %v, want ErrAuthFailed", err)
	}
}
