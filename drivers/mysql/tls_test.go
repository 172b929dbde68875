package mysql

import (
	"testing"

	"github.com/cosid-go/store/internal/testing/mysqltest"
	"github.com/cosid-go/store/internal/testing/testcerts"
)

// TLS: a server that accepts TLS only is opened with tls=true and the CA
// that signed its certificate (tlsCA); without TLS the server refuses,
// and with TLS but not that CA the driver refuses the server: neither
// falls back to an unverified or plain connection.
func TestTLS(t *testing.T) {
	ca := testcerts.NewCA(t, "mysql")
	pair := ca.Issue("127.0.0.1")
	srv := mysqltest.StartTLS(t, pair.CertFile, pair.KeyFile)
	database := srv.NewDatabase(t)
	dsn := mysqltest.DSN(srv.Addr(), "")
	st := openStore(t, srv.Addr(), database, map[string]string{"tls": "true", "tlsCA": ca.CertFile})
	if _, err := st.Ranges().Next(t.Context(), "k", 1); err != nil {
		t.Fatalf("Next over TLS: %v", err)
	}
	for name, opts := range map[string]map[string]string{
		"no tls":           {"dsn": dsn, "database": database, "connectTimeout": "5s"},
		"tls, another CA":  {"dsn": dsn, "database": database, "tls": "true", "tlsCA": testcerts.NewCA(t, "other").CertFile},
		"tls, system CAs":  {"dsn": dsn, "database": database, "tls": "true"},
		"tlsCA, tls=false": {"dsn": dsn, "database": database, "tls": "false", "tlsCA": ca.CertFile},
	} {
		if d, err := fromOptions(opts); err == nil {
			d.Close()
			t.Errorf("%s: opened the TLS-only server", name)
		}
	}
}
