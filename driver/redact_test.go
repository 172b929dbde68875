package driver

import (
	"strings"
	"testing"
)

// TestRedact: each form of secret is hidden, and the text around it kept.
func TestRedact(t *testing.T) {
	const s = "Hunter2"
	for _, tc := range []struct{ name, in, want string }{
		{"url userinfo", "connString=postgres://ids:Hunter2@db:5432/ids", "connString=postgres://ids:***@db:5432/ids"},
		{"url userinfo with @ and :", "postgresql://ids:Hun:ter@2@db/ids?sslmode=disable", "postgresql://ids:***@db/ids?sslmode=disable"},
		{"url multi-host", "postgres://ids:Hunter2@h1:5432,h2:5432/ids", "postgres://ids:***@h1:5432,h2:5432/ids"},
		{"url without password", "postgres://ids@db/ids", "postgres://ids@db/ids"},
		{"url query password", "postgres://db/ids?sslmode=disable&password=Hunter2&user=ids", "postgres://db/ids?sslmode=disable&password=***&user=ids"},
		{"conninfo pair", "host=db password=Hunter2 dbname=ids", "host=db password=*** dbname=ids"},
		{"conninfo quoted", `host=db password='Hun ter\'2' dbname=ids`, "host=db password=*** dbname=ids"},
		{"conninfo spaced", "host=db password = Hunter2 dbname=ids", "host=db password = *** dbname=ids"},
		{"option key", "password=Hunter2", "password=***"},
		{"option in a spec", "postgres:password=Hunter2,schema=s", "postgres:password=***,schema=s"},
		{"secret-looking keys", "tls.keyPassword=Hunter2 apiToken=Hunter2 AUTH=Hunter2 client_secret=Hunter2",
			"tls.keyPassword=*** apiToken=*** AUTH=*** client_secret=***"},
		{"zookeeper auth option", "auth=digest:alice:Hunter2,digest:bob:Hunter2,root=/x", "auth=***,root=/x"},
		{"zookeeper digest in text", `entry "digest:alice:Hunter2" refused`, `entry "digest:alice:***" refused`},
		{"double quoted", `password="Hun\"ter2" x`, `password=*** x`},
		{"mysql dsn", "dsn=ids:Hunter2@tcp(db:3306)/ids?tls=true", "dsn=ids:***@tcp(db:3306)/ids?tls=true"},
		{"mysql dsn with @ and :", "ids:Hun:ter@2@unix(/run/mysqld.sock)/ids", "ids:***@unix(/run/mysqld.sock)/ids"},
		{"mysql dsn default address", `open "ids:Hunter2@/ids" failed`, `open "ids:***@/ids" failed`},
		{"mysql dsn in a spec", "mysql:dsn=ids:Hunter2@tcp(db)/ids,database=x", "mysql:***@tcp(db)/ids,database=x"},
		{"mysql dsn without password", "ids@tcp(db:3306)/ids", "ids@tcp(db:3306)/ids"},
		{"nothing secret", `key "orders": sealed at 5 (root=/cosid)`, `key "orders": sealed at 5 (root=/cosid)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Redact(tc.in)
			if got != tc.want {
				t.Errorf("Redact(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if strings.Contains(got, s) || strings.Contains(got, "ter2") {
				t.Errorf("Redact(%q) = %q shows the secret", tc.in, got)
			}
		})
	}
}

// TestRedactURLPassword: a URL password holding '#', '?', '/' or '@'
// unencoded (pgx connects with them) is hidden whole.
func TestRedactURLPassword(t *testing.T) {
	for in, want := range map[string]string{
		"connString=postgres://u:p#x@db:5432/ids":         "connString=postgres://u:***@db:5432/ids",
		"connString=postgres://u:p?x@db/ids?a=1 schema=s": "connString=postgres://u:***@db/ids?a=1 schema=s",
		`"postgres://u:pa/x@db/ids,=x": bad`:              `"postgres://u:***@db/ids,=x": bad`,
		"postgres://u:p@x@db/ids":                         "postgres://u:***@db/ids",
		"postgres://u@db/ids":                             "postgres://u@db/ids",
		"postgres://db:5432/ids and path=/x":              "postgres://db:5432/ids and path=/x",
		"password=x":                                      "password=***",
		// A password with a space or a quote (an invalid URL, printed in
		// the refusal) is hidden to its '@'.
		"connString=postgres://u:pa ss@db/ids schema=s":   "connString=postgres://u:***@db/ids schema=s",
		`etcd:endpoints=http://u:p"q 'r@h:2379,prefix=/x`: "etcd:endpoints=http://u:***@h:2379,prefix=/x",
		"http://u:a b@c@h:1 next":                         "http://u:***@h:1 next",
		"http://h:2379 and http://u:p w@h2":               "http://h:2379 and http://u:***@h2",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRedactPEM: a private key pasted into an option (tls.keyFile holding
// the key instead of its path) is never printed, whole or cut short.
func TestRedactPEM(t *testing.T) {
	const body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"
	key := "-----BEGIN PRIVATE KEY-----\n" + body + "\n-----END PRIVATE KEY-----\n"
	for _, text := range []string{
		"tls.keyFile=" + key,
		`option "tls.keyFile": value "` + strings.ReplaceAll(key, "\n", `\n`) + `": no such file`,
		"open " + key[:40] + ": no such file", // the END line cut off
	} {
		got := Redact(text)
		if strings.Contains(got, body[:12]) || !strings.Contains(got, "PEM data not shown") {
			t.Errorf("Redact(%q) = %q: want the PEM data replaced", text, got)
		}
	}
	err := &OptionError{Key: "tls.keyFile", Value: key, Reason: "no such file"}
	if strings.Contains(err.Error(), body[:12]) {
		t.Errorf("OptionError shows the key: %v", err)
	}
}
