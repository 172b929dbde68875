package postgres

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/apitest"
	"github.com/cosid-go/store/internal/testing/pgtest"
)

// Bad options are errors naming the key; the password never appears in
// any error, whether the connection string is malformed or the server
// cannot be reached.
func TestOptions(t *testing.T) {
	const secret = "s3cr3t-pw"
	for _, c := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"shema": "x"}, `unknown option "shema"`},
		{map[string]string{"poolSize": "-1"}, `option "poolSize"`},
		{map[string]string{"poolSize": "0"}, `option "poolSize"`},
		{map[string]string{"poolSize": "99999999999"}, `option "poolSize": value "99999999999": must be between 1 and 10000`},
		{map[string]string{"poolSize": "3000000000"}, `option "poolSize": value "3000000000": must be between 1 and 10000`},
		{map[string]string{"lockTimeout": "soon"}, `option "lockTimeout"`},
		{map[string]string{"schema": "a'b"}, `option "schema"`},
		{map[string]string{"schema": strings.Repeat("s", 64)}, `option "schema"`},
		{map[string]string{"schema": "a{now}"}, `option "schema"`},
		{map[string]string{"schema": "x{forupdate}"}, `option "schema"`},
		{map[string]string{"schema": "a b"}, `option "schema"`},
		{map[string]string{"lockTimeout": "50ms"}, `option "lockTimeout": value "50ms": must be between 100ms and 24h`},
		{map[string]string{"connString": "host=127.0.0.1 port=notaport password=" + secret}, `cannot be parsed`},
		// The fields that carry no secret say why.
		{map[string]string{"sslmode": "bogus"}, `option "sslmode": value "bogus": not one of disable, allow, prefer, require, verify-ca, verify-full`},
		{map[string]string{"port": "notaport"}, `option "port": value "notaport": not an integer`},
		{map[string]string{"port": "99999"}, `option "port": value "99999": must be between 1 and 65535`},
		{map[string]string{"host": "a,b", "port": "5432,0"}, `option "port": value "5432,0": port "0" of the list: must be between 1 and 65535`},
		{map[string]string{"host": ""}, `option "host": value "": empty; leave the option out for the default`},
		{map[string]string{"host": "a,,b"}, `option "host": value "a,,b": an empty host`},
		{map[string]string{"password": "", "host": "127.0.0.1"}, `option "password": value (redacted): empty`},
		{map[string]string{"connString": "host=127.0.0.1 port=notaport password=" + secret},
			`option "connString": value (redacted): cannot be parsed as a PostgreSQL connection string: its port "notaport": not an integer`},
		{map[string]string{"connString": "host=127.0.0.1 port=99999 password='a b" + secret + "'"},
			`its port "99999": must be between 1 and 65535`},
		{map[string]string{"connString": "host=127.0.0.1 password=" + secret + " sslmode=bogus"}, `its sslmode "bogus": not one of disable`},
		{map[string]string{"connString": "postgres://u:" + secret + "@h/db?sslmode=bogus"}, `its sslmode "bogus": not one of disable`},
		{map[string]string{"connString": "postgres://u:" + secret + "@127.0.0.1:1/db", "connectTimeout": "1s"}, `127.0.0.1`},
		{map[string]string{"host": "127.0.0.1", "port": "1", "password": secret, "connectTimeout": "1s"}, `127.0.0.1`},
	} {
		_, err := fromOptions(c.opts)
		if err == nil {
			t.Errorf("Open(%v) succeeded", c.opts)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%v) = %v; want it to say %q", c.opts, err, c.want)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("Open(%v) printed the password: %v", c.opts, err)
		}
		if strings.Contains(c.want, "option") && !errors.Is(err, driver.ErrInvalidArgument) {
			t.Errorf("Open(%v) = %v; want ErrInvalidArgument", c.opts, err)
		}
	}
}

// The separate fields override their part of a URL or a keyword string.
func TestWithFields(t *testing.T) {
	for _, base := range []string{"postgres://a:b@h1:5432/d1?sslmode=disable", "host=h1 port=5432 user=a password=b dbname=d1 sslmode=disable"} {
		cs := withFields(base, map[string]string{"host": "h2", "port": "6000", "user": "u2", "password": "p 'x", "database": "d2"})
		cfg, err := pgx.ParseConfig(cs)
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		if cfg.Host != "h2" || cfg.Port != 6000 || cfg.User != "u2" || cfg.Password != "p 'x" || cfg.Database != "d2" {
			t.Errorf("%s with fields: host %s port %d user %s password %q db %s", base, cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database)
		}
	}
}

// The longest schema name the server keeps whole works for locks too: the
// NOTIFY channel is a hash, so an Unlock wakes the next waiter.
func TestLongSchema(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	schema := freshSchema("long_")
	schema += strings.Repeat("s", 63-len(schema))
	a := openAt(t, srv.ConnString(), schema, nil)
	b := openAt(t, srv.ConnString(), schema, nil)
	ctx := t.Context()
	la, err := a.Lock(ctx, "x", "a", true)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := b.Lock(ctx, "x", "b", true)
		if err == nil {
			err = l.Unlock(ctx)
		}
		got <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ws, err := a.Waiters(ctx, "x")
		if err == nil && len(ws) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b did not queue: %v %v", ws, err)
		}
		time.Sleep(5 * time.Millisecond) // state only visible in the database
	}
	if err := la.Unlock(ctx); err != nil {
		t.Fatalf("Unlock with a %d-byte schema: %v", len(schema), err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second): // well under the 10s lock timeout: woken, not expired
		t.Fatal("the waiter was not woken by the Unlock")
	}
}

// A connection failure is about the server: no schema prefix, and the
// address is named once (pgx names it, the dial error named it again).
func TestConnectFailureMessage(t *testing.T) {
	_, err := fromOptions(map[string]string{"host": "127.0.0.1", "port": "1", "connectTimeout": "2s"})
	if err == nil {
		t.Fatal("Open of a closed port succeeded")
	}
	msg := err.Error()
	t.Log(msg)
	if strings.HasPrefix(msg, "schema") || strings.Count(msg, "127.0.0.1:1") != 1 || !strings.Contains(msg, "connection refused") {
		t.Errorf("connection failure reads %q; want the address once, the cause, no schema prefix", msg)
	}
}

// TestOpenStore: OpenStore on a caller's pool gives the checked store (a
// negative step is refused before the driver, and the key keeps its
// value), checks its Options, and leaves the pool open when it closes.
func TestOpenStore(t *testing.T) {
	ctx := t.Context()
	srv := pgtest.Shared(t)
	pool, err := pgxpool.New(ctx, srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := OpenStore(ctx, nil, nil); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("OpenStore with a nil pool: %v, want ErrInvalidArgument", err)
	}
	if _, err := OpenStore(ctx, pool, &Options{LockTimeout: 50 * time.Millisecond}); !errors.Is(err, store.ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "LockTimeout") {
		t.Errorf("OpenStore with LockTimeout 50ms: %v, want ErrInvalidArgument naming it", err)
	}
	schema := freshSchema("openstore")
	st, err := OpenStore(ctx, pool, &Options{Schema: schema}, store.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	apitest.Checked(t, st, 10*time.Second)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(ctx); err != nil {
		t.Errorf("the caller's pool after the store closed: %v", err)
	}
}
