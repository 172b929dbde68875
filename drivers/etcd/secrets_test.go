package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// Hostile secrets: passwords holding what ends a redaction early (a
// quote, a space, a comma, an '@', a "://"), and a key's PEM. Every one
// holds both markers, each on a side of the hostile character.
var (
	hostilePasswords = []string{`S3CR"ET9`, "S3CR ET9", "S3CR'ET9", "S3CR`ET9", "S3CR,ET9", "S3CR@ET9", "S3CR://ET9", "S3CR\tET9", "S3CR\nET9", `S3CR\ET9`}
	secretMarkers    = []string{"S3CR", "ET9", "HUNTER2"}
	hostilePEM       = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIHUNTER2hunter2\n-----END PRIVATE KEY-----\n"
)

func hostileEndpoints(pw string) []string {
	return []string{
		"http://u:" + pw + "@127.0.0.1:1",
		"HTTPS://u:" + pw + "@127.0.0.1:1",
		"u:" + pw + "@127.0.0.1:1",
		"127.0.0.1:2,http://u:" + pw + "@127.0.0.1:1",
	}
}

// printedEveryWay is v printed with every verb, through a pointer and in
// a slice, and logged with slog's handlers.
func printedEveryWay(v any) []string {
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		outs = append(outs, fmt.Sprintf(verb, v), fmt.Sprintf(verb, []any{v}))
	}
	var buf strings.Builder
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "v", v)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "v", v)
	return append(outs, buf.String())
}

// endpointRefusals opens ep through store.Open and OpenStore and returns
// the errors that refused it; one that is not ErrInvalidArgument naming
// the endpoints option is reported instead.
func endpointRefusals(t *testing.T, ep string) []error {
	t.Helper()
	_, err := store.Open("etcd", map[string]string{"endpoints": ep, "dialTimeout": "100ms"})
	_, err2 := OpenStore(t.Context(), &Options{Endpoints: strings.Split(ep, ","), DialTimeout: 100 * time.Millisecond})
	var refused []error
	for _, err := range []error{err, err2} {
		if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), `"endpoints"`) {
			t.Errorf("Open of %q: %v; want ErrInvalidArgument naming endpoints", ep, err)
			continue
		}
		refused = append(refused, err)
	}
	return refused
}

// errorPrintedEveryWay is err printed every way, and so is the
// OptionError it wraps, if any: a %#v of it shows its fields.
func errorPrintedEveryWay(err error) []string {
	outs := printedEveryWay(err)
	var oe *driver.OptionError
	if errors.As(err, &oe) {
		outs = append(outs, printedEveryWay(oe)...)
	}
	return outs
}

func showsSecret(out string) bool {
	for _, m := range secretMarkers {
		if strings.Contains(out, m) {
			return true
		}
	}
	return false
}

// TestEndpointCredentialsNeverPrinted: an endpoint with a password holding
// a quote, a space or any other character that ends a redaction is
// refused, naming the option, and no part of the password is in the
// error, however it is printed: its text, every verb, the OptionError it
// wraps (a %#v shows fields), slog.
func TestEndpointCredentialsNeverPrinted(t *testing.T) {
	for _, pw := range hostilePasswords {
		for _, ep := range hostileEndpoints(pw) {
			for _, err := range endpointRefusals(t, ep) {
				for _, out := range errorPrintedEveryWay(err) {
					if showsSecret(out) {
						t.Errorf("Open of %q: the error shows the password: %s", ep, out)
						break
					}
				}
			}
		}
	}
}

// TestOptionsNeverPrintSecrets: Options printed every way show neither the
// password, nor a password inside an endpoint URL, nor a key's PEM pasted
// into a TLS file field; the rest (the hosts, a file's path) is shown.
func TestOptionsNeverPrintSecrets(t *testing.T) {
	for _, pw := range hostilePasswords {
		for _, o := range []Options{
			{Endpoints: hostileEndpoints(pw), Username: "u", Password: pw},
			{Endpoints: []string{"127.0.0.1:1"}, TLSKeyFile: hostilePEM, TLSCertFile: hostilePEM, TLSCAFile: "/etc/ca.pem"},
		} {
			outs := append(printedEveryWay(o), printedEveryWay(&o)...)
			outs = append(outs, o.LogValue().String())
			for _, out := range outs {
				if showsSecret(out) || strings.Contains(out, "PRIVATE KEY") {
					t.Errorf("printed Options show a secret: %s", out)
				} else if !strings.Contains(out, "127.0.0.1:1") {
					t.Errorf("printed Options do not show the endpoint: %s", out)
				}
			}
		}
	}
	if out := fmt.Sprint(Options{TLSKeyFile: "/etc/k.pem"}); !strings.Contains(out, "/etc/k.pem") {
		t.Errorf("printed Options hide a key file's path: %s", out)
	}
}

// TestRefusedPasswordNotKept: the error of a password the member refused
// (made without a member: the error clientError returns) holds no part of
// it, printed any way.
func TestRefusedPasswordNotKept(t *testing.T) {
	for _, pw := range hostilePasswords {
		cfg, err := parseOptions(map[string]string{"endpoints": "127.0.0.1:1", "username": "u", "password": pw})
		if err != nil {
			t.Fatal(err)
		}
		s := newStore(cfg, nil)
		err = s.clientError(fmt.Errorf("etcdserver: %w", context.Canceled))
		authErr := s.clientError(rpctypes.ErrAuthFailed)
		s.Close()
		for _, e := range []error{err, authErr} {
			for _, out := range errorPrintedEveryWay(e) {
				if showsSecret(out) {
					t.Errorf("the error shows the password: %s", out)
				}
			}
		}
		if !errors.As(authErr, new(*driver.OptionError)) {
			t.Errorf("a refused password: %v; want an OptionError", authErr)
		}
	}
}

// TestEndpointQueryNeverPrinted: an endpoint URL with a query, a fragment
// or a path (which the client ignores, and which may carry a token) is
// refused at Open, naming the option and showing nothing of it; Options
// printed show no query either. Before, Open accepted it and its errors
// printed it as given ("no connection to etcd at
// http://127.0.0.1:1/?password=...").
func TestEndpointQueryNeverPrinted(t *testing.T) {
	for _, ep := range []string{
		"http://127.0.0.1:1/?password=HUNTER2",
		"http://127.0.0.1:1?token=HUNTER2",
		"https://127.0.0.1:1/#HUNTER2",
		"http://127.0.0.1:1/HUNTER2",
		"127.0.0.1:2379,http://127.0.0.1:1/?t=HUNTER2",
	} {
		for _, err := range endpointRefusals(t, ep) {
			for _, out := range errorPrintedEveryWay(err) {
				if showsSecret(out) {
					t.Errorf("Open of %q: the error shows the query: %s", ep, out)
					break
				}
			}
		}
		for _, out := range printedEveryWay(Options{Endpoints: strings.Split(ep, ",")}) {
			if showsSecret(out) {
				t.Errorf("Options with endpoint %q printed: %s", ep, out)
				break
			}
		}
	}
	// A trailing slash is no path: still accepted.
	st, err := store.Open("etcd", map[string]string{"endpoints": sharedServer(t).Endpoints()[0] + "/"})
	if err != nil {
		t.Fatalf("Open of an endpoint with a trailing slash: %v", err)
	}
	st.Close()
}
