package postgres

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/driver"
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
		{map[string]string{"lockTimeout": "soon"}, `option "lockTimeout"`},
		{map[string]string{"schema": "a'b"}, `option "schema"`},
		{map[string]string{"connString": "host=127.0.0.1 port=notaport password=" + secret}, `cannot be parsed`},
		{map[string]string{"connString": "postgres://u:" + secret + "@127.0.0.1:1/db", "connectTimeout": "1s"}, `127.0.0.1`},
		{map[string]string{"host": "127.0.0.1", "port": "1", "password": secret, "connectTimeout": "1s"}, `127.0.0.1`},
	} {
		_, err := Open(c.opts)
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
