package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/mysqltest"
)

// A password given in the dsn or as a field is never printed: not in a
// refusal of the dsn, of the field, nor in a failure to connect.
func TestSecretsNeverPrinted(t *testing.T) {
	const secret = "Hunter2-secret"
	p := mysqltest.NewProxy(t, "127.0.0.1:1")
	p.Cut()
	for name, opts := range map[string]map[string]string{
		"bad dsn":        {"dsn": "ids:" + secret + "@tcp(db:3306)/ids?tls=maybe&x"},
		"empty password": {"dsn": "ids:" + secret + "@tcp(db)/", "password": ""},
		"no server":      {"dsn": "ids:" + secret + "@tcp(" + p.Addr() + ")/", "connectTimeout": "1s"},
		"field":          {"dsn": "ids@tcp(" + p.Addr() + ")/", "password": secret, "connectTimeout": "1s"},
	} {
		_, err := fromOptions(opts)
		if err == nil {
			t.Errorf("%s: opened", name)
			continue
		}
		if msg := fmt.Sprintf("%v %+v", err, err); strings.Contains(msg, secret) {
			t.Errorf("%s: the error shows the password: %s", name, msg)
		}
	}
	if got := driver.Redact("dsn=ids:" + secret + "@tcp(db:3306)/ids"); strings.Contains(got, secret) {
		t.Errorf("Redact shows the password: %s", got)
	}
}

// The fields override the dsn's parts: a dsn naming a dead address opens
// the server that host and port name, and database wins over the dsn's.
func TestFieldsOverrideDSN(t *testing.T) {
	srv := mysqltest.Shared(t)
	database := srv.NewDatabase(t)
	host, port, _ := net.SplitHostPort(srv.Addr())
	st, err := OpenStore(t.Context(), &Options{DSN: "root@tcp(127.0.0.1:1)/other", Host: host, Port: atoiT(t, port), Database: database})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Ranges().Next(t.Context(), "k", 1); err != nil {
		t.Fatal(err)
	}
	var n int
	db := openRaw(t, srv)
	if err := db.QueryRowContext(t.Context(), "SELECT count(*) FROM `"+database+"`.cosid_range").Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows in %s.cosid_range: %d, %v; want 1", database, n, err)
	}
}

// create=false on a database without the tables fails with ErrNotFound
// and creates nothing, not even the database.
func TestCreateFalseWritesNothing(t *testing.T) {
	srv := mysqltest.Shared(t)
	missing := fmt.Sprintf("never_%s", strings.ReplaceAll(t.Name(), "/", "_"))
	_, err := OpenStore(t.Context(), &Options{DSN: srv.DSN(""), Database: missing, NoCreate: true})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("OpenStore with NoCreate on a missing database: %v; want ErrNotFound", err)
	}
	var n int
	if err := openRaw(t, srv).QueryRowContext(t.Context(), "SELECT count(*) FROM information_schema.schemata WHERE schema_name = ?", missing).Scan(&n); err != nil || n != 0 {
		t.Fatalf("databases named %s: %d, %v; want none", missing, n, err)
	}
}

// Ping reaches the server; Close makes the store refuse calls.
func TestPingAndIdentity(t *testing.T) {
	srv := mysqltest.Shared(t)
	st := openStore(t, srv.Addr(), srv.NewDatabase(t), nil)
	ctx := context.Background()
	if err := st.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	id, err := st.ID(ctx)
	if err != nil || id == "" {
		t.Fatalf("ID = %q, %v", id, err)
	}
}

func openRaw(t *testing.T, srv *mysqltest.Server) *sql.DB {
	db, err := sql.Open("mysql", srv.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func atoiT(t *testing.T, s string) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}
