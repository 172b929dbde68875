package etcd

import (
	"context"
	"errors"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/etcdtest"
	"github.com/cosid-go/store/internal/testing/eventrec"
	"github.com/cosid-go/store/internal/testing/leakcheck"
	"github.com/cosid-go/store/internal/testing/testcerts"
	"github.com/cosid-go/store/tck"
)

// TestTLS runs the TLS checks on a member serving clients over TLS only,
// which accepts only certificates its CA issued; the certificates are
// made by the test.
func TestTLS(t *testing.T) {
	ca := testcerts.NewCA(t, "cosid-test")
	env := tlsEnv{c: etcdtest.StartTLS(t, 1, ca), ca: ca, client: ca.Issue("store")}
	for _, c := range []struct {
		name string
		run  func(t *testing.T, env tlsEnv)
	}{
		{"TCK", testTLSTCK},
		{"ForeignCA", testTLSForeignCA},
		{"ForeignClientCert", testTLSForeignClientCert},
		{"NoClientCert", testTLSNoClientCert},
		{"NoGoroutineLeft", testTLSNoGoroutineLeft},
		{"SchemeCase", testTLSSchemeCase},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, env) })
	}
}

type tlsEnv struct {
	c      *etcdtest.Cluster
	ca     *testcerts.CA
	client testcerts.Pair
}

// options are a store's options on the TLS member, with extra added.
func (e tlsEnv) options(extra map[string]string) map[string]string {
	o := map[string]string{
		"endpoints":  e.c.Endpoints()[0],
		"prefix":     freshPrefix("tls"),
		"tls.caFile": e.ca.CertFile, "tls.certFile": e.client.CertFile, "tls.keyFile": e.client.KeyFile,
	}
	maps.Copy(o, extra)
	return o
}

// testTLSTCK: the whole TCK passes over TLS, the member's restart included.
func testTLSTCK(t *testing.T, env tlsEnv) {
	tls := env.options(nil)
	delete(tls, "prefix")
	s := suite(func(_ context.Context, t *testing.T) (tck.Harness, error) {
		h := newHarness(t)
		h.cluster, h.extra = env.c, tls
		return h, nil
	}, env.options(nil))
	s.Histories = 4
	tck.Run(t, s)
}

// openFails opens a store that must fail, with ErrUnavailable and an error
// naming the endpoint and every one of want, well before the 30s context
// (the 5s dialTimeout is the bound; a TLS failure returns at once), and
// showing no line of the client's key.
func openFails(t *testing.T, env tlsEnv, options map[string]string, want ...string) {
	t.Helper()
	ev := eventrec.New()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start := time.Now()
	st, err := store.OpenContext(ctx, "etcd", options, ev.Options()...)
	took := time.Since(start)
	if err == nil {
		st.Close()
		t.Fatal("Open succeeded")
	}
	t.Logf("Open: %v (after %v)", err, took)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("error %q is not ErrUnavailable", err)
	}
	for _, w := range append(want, env.c.Endpoints()[0][len("https://"):]) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	// The dialTimeout, and slack for a loaded machine.
	if took > 20*time.Second {
		t.Errorf("Open took %v; dialTimeout is 5s", took)
	}
	key, rerr := os.ReadFile(options["tls.keyFile"])
	if rerr != nil {
		return
	}
	for _, line := range strings.Split(string(key), "\n") {
		if len(line) > 8 && !strings.HasPrefix(line, "-----") &&
			(strings.Contains(err.Error(), line) || strings.Contains(ev.Log(), line)) {
			t.Errorf("the error or the log shows a line of the key file: %v\n%s", err, ev.Log())
		}
	}
}

// testTLSForeignCA: the member's certificate is not signed by the CA of
// tls.caFile: Open fails saying so.
func testTLSForeignCA(t *testing.T, env tlsEnv) {
	other := testcerts.NewCA(t, "other")
	openFails(t, env, env.options(map[string]string{"tls.caFile": other.CertFile}),
		"tls.caFile", "certificate signed by unknown authority")
}

// testTLSForeignClientCert: the member refuses a client certificate
// another CA issued: Open fails naming the certificate option and the
// member's alert.
func testTLSForeignClientCert(t *testing.T, env tlsEnv) {
	other := testcerts.NewCA(t, "other").Issue("intruder")
	openFails(t, env, env.options(map[string]string{"tls.certFile": other.CertFile, "tls.keyFile": other.KeyFile}),
		"the one of tls.certFile is not")
}

// testTLSNoClientCert: the member requires a client certificate and gets
// none: Open fails saying which options to set.
func testTLSNoClientCert(t *testing.T, env tlsEnv) {
	o := env.options(nil)
	delete(o, "tls.certFile")
	delete(o, "tls.keyFile")
	openFails(t, env, o, "requires a client certificate", "tls.certFile and tls.keyFile")
}

// testTLSNoGoroutineLeft: a store used over TLS, and the refused Opens,
// leave no goroutine behind.
func testTLSNoGoroutineLeft(t *testing.T, env tlsEnv) {
	defer leakcheck.VerifyNone(t, goleak.IgnoreCurrent())
	st, err := store.Open("etcd", env.options(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Ranges().Next(t.Context(), "k", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Locks().Lock(t.Context(), "l"); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	other := testcerts.NewCA(t, "other")
	if _, err := store.Open("etcd", env.options(map[string]string{"tls.caFile": other.CertFile})); err == nil {
		t.Fatal("Open with a foreign CA succeeded")
	}
}

// TestAuth: against a member with authentication on, the store works with
// its user and password; a wrong password fails Open at once, naming the
// option and not showing the value; no user at all is refused by name.
func TestAuth(t *testing.T) {
	c := etcdtest.Start(t, 1)
	password := "pw-" + freshPrefix("auth")[len("/test/"):]
	c.EnableAuth(t, "store", password)
	opts := func(user, password string) map[string]string {
		return map[string]string{"endpoints": c.Endpoints()[0], "prefix": freshPrefix("auth"),
			"username": user, "password": password}
	}
	ctx := t.Context()
	st, err := store.Open("etcd", opts("store", password))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Ranges().Next(ctx, "k", 1); err != nil {
		t.Errorf("Next as the user: %v", err)
	}
	st.Close()

	for _, tc := range []struct {
		name, user, password string
		want                 []string
	}{
		{"WrongPassword", "store", "not-" + password, []string{`option "password"`, `"store"`, "authentication failed"}},
		{"NoUser", "", "", []string{"user name is empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			octx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			st, err := store.OpenContext(octx, "etcd", opts(tc.user, tc.password))
			took := time.Since(start)
			if err == nil {
				st.Close()
				t.Fatal("Open succeeded")
			}
			t.Logf("Open: %v (after %v)", err, took)
			if tc.user != "" && !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("a refused password: %v, want ErrInvalidArgument", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), password) {
				t.Errorf("the error shows a password: %v", err)
			}
			if took > 20*time.Second {
				t.Errorf("Open took %v", took)
			}
		})
	}
}
