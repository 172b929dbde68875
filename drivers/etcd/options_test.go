package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/freeport"
	"github.com/cosid-go/store/internal/testing/leakcheck"
	"github.com/cosid-go/store/internal/testing/netproxy"
	"github.com/cosid-go/store/internal/testing/poll"
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

// TestOpenWithoutDeadline: store.Open (no context of the caller's) of
// endpoints where nobody listens, or where a proxy accepts connections
// and stays silent, ends after about dialTimeout with ErrUnavailable,
// naming the endpoint, instead of waiting forever.
func TestOpenWithoutDeadline(t *testing.T) {
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	frozen := netproxy.New(t, strings.TrimPrefix(sharedServer(t).Endpoints()[0], "http://"))
	frozen.Freeze()
	for _, ep := range []string{fmt.Sprintf("127.0.0.1:%d", port), frozen.Addr()} {
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			st, err := store.Open("etcd", map[string]string{"endpoints": ep, "dialTimeout": "1s", "prefix": freshPrefix("nodeadline")})
			if st != nil {
				st.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), ep) {
				t.Errorf("Open of %s: %v; want ErrUnavailable naming it", ep, err)
			}
			t.Logf("Open of %s ended after %v", ep, time.Since(start).Round(time.Millisecond))
		case <-time.After(30 * time.Second):
			t.Fatalf("Open of %s with dialTimeout 1s still waits after 30s", ep)
		}
	}
	frozen.Thaw()
}

// TestFrozenConnection: with the store's connection silent (a network
// that drops everything), each call ends within the store's timeout with
// ErrUnavailable, and Close, with a lock held and calls in flight, returns
// promptly and leaves no goroutine.
func TestFrozenConnection(t *testing.T) {
	p := netproxy.New(t, strings.TrimPrefix(sharedServer(t).Endpoints()[0], "http://"))
	defer leakcheck.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := t.Context()
	// A timeout well past quiet (1s): a call ending sooner after the last
	// answer (the Lock's, just before the freeze) is contention, not an
	// outage, and a store's calls get down to 63/64 of its timeout.
	st, err := store.Open("etcd", map[string]string{"endpoints": p.Addr(), "prefix": freshPrefix("frozen"), "sessionTTL": "2s"},
		store.WithTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Ranges().Next(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	l, err := st.Locks().Lock(ctx, "l")
	if err != nil {
		t.Fatal(err)
	}
	p.Freeze()
	ns := store.Namespace{Name: "ns", Limit: 2, Tolerance: time.Second}
	for name, call := range map[string]func() error{
		"Next":    func() error { _, err := st.Ranges().Next(ctx, "k", 1); return err },
		"Seal":    func() error { _, err := st.Ranges().Seal(ctx, "k"); return err },
		"Acquire": func() error { _, err := st.Slots().Acquire(ctx, ns, "o", store.AcquireOptions{}); return err },
		"TryLock": func() error { _, err := st.Locks().TryLock(ctx, "m"); return err },
		"Ping":    func() error { return st.Ping(ctx) },
	} {
		start := time.Now()
		err := call()
		if d := time.Since(start); d > 15*time.Second || !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s on a frozen connection: %v after %v; want ErrUnavailable within the 2s timeout", name, err, d)
		}
		t.Logf("%s: %v", name, time.Since(start).Round(time.Millisecond))
	}
	inFlight := make(chan error, 1)
	go func() { _, err := st.Ranges().Next(context.Background(), "k", 1); inFlight <- err }()
	start := time.Now()
	if err := st.Close(); err != nil {
		t.Logf("Close: %v", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("Close on a frozen connection took %v", d)
	}
	t.Logf("Close: %v", time.Since(start).Round(time.Millisecond))
	if !poll.Closed(l.Lost()) {
		t.Error("the hold's Lost is open after Close")
	}
	select {
	case <-inFlight:
	case <-time.After(15 * time.Second):
		t.Error("a Next in flight at Close did not end")
	}
	p.Thaw()
}

// TestPrefixSpellings: a prefix with an invisible or control character,
// invalid UTF-8 or a blank segment (a second spelling, to a reader, of
// another store's prefix) is refused, naming the option, as a key with
// one would be; the same prefix without it opens.
func TestPrefixSpellings(t *testing.T) {
	for _, p := range []string{"", "/", "/ids/", "//ids", "ids", "/ids\x00", "/ids\t", "/ids\n/x", "/ids\u200b", "/\ufeffids", "/ids\xff", "/ids/ /x", "/ids/\u00a0"} {
		_, err := store.Open("etcd", map[string]string{"prefix": p, "endpoints": "127.0.0.1:1", "dialTimeout": "100ms"})
		if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), `"prefix"`) {
			t.Errorf("Open with prefix %q: %v; want ErrInvalidArgument naming the prefix", p, err)
		}
	}
	st, err := store.Open("etcd", map[string]string{"prefix": "/idé/ß x", "endpoints": strings.Join(sharedServer(t).Endpoints(), ",")})
	if err != nil {
		t.Fatalf("Open with a prefix of letters and a space: %v", err)
	}
	st.Close()
}

// TestOptionsPrintNoPassword: OpenStore's Options, printed with any verb
// (a program logging its configuration) or logged with log/slog, never
// show the password; the other fields are still shown.
func TestOptionsPrintNoPassword(t *testing.T) {
	o := Options{Endpoints: []string{"etcd1:2379"}, Username: "u", Password: "hunter2", TLSKeyFile: "/etc/k.pem"}
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		outs = append(outs, fmt.Sprintf(verb, o), fmt.Sprintf(verb, &o), fmt.Sprintf(verb, []any{o}))
	}
	var buf strings.Builder
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("config", "etcd", o, "ptr", &o)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("config", "etcd", o)
	outs = append(outs, buf.String())
	for _, out := range outs {
		if strings.Contains(out, "hunter2") || !strings.Contains(out, "etcd1:2379") {
			t.Errorf("printed Options: %s", out)
		}
	}
}

// TestEndpointCredentialsWithoutScheme: credentials in an endpoint without
// a scheme (user:password@host:port) are refused like those in a URL, and
// the password is shown neither there nor in any later error.
func TestEndpointCredentialsWithoutScheme(t *testing.T) {
	for _, ep := range []string{"u:hunter2@127.0.0.1:1", "127.0.0.1:2379,u:hunter2@127.0.0.1:1"} {
		_, err := store.Open("etcd", map[string]string{"endpoints": ep, "dialTimeout": "200ms"})
		if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), `"endpoints"`) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open with endpoints %q: %v; want ErrInvalidArgument naming endpoints, without the password", ep, err)
		}
	}
}
