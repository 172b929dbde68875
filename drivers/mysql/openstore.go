package mysql

import (
	"context"
	"strconv"
	"time"

	"github.com/cosid-go/store"
)

// Options configures a store opened with OpenStore: the options of the
// package documentation, as fields. Zero values are the defaults.
type Options struct {
	// DSN is a go-sql-driver/mysql data source name; the fields below,
	// when set, override its parts.
	DSN                  string
	Host, User, Password string
	Port                 int
	Database             string
	TLS                  string // false, true, skip-verify or preferred
	TLSCA                string // a PEM file of the CAs that verify the server
	PoolSize             int
	ConnectTimeout       time.Duration
	LockTimeout          time.Duration
	// NoCreate opens only a database that holds the store's tables.
	NoCreate bool
}

// options is o as the factory's options.
func (o *Options) options() map[string]string {
	m := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	set("dsn", o.DSN)
	set("host", o.Host)
	set("user", o.User)
	set("password", o.Password)
	set("database", o.Database)
	set("tls", o.TLS)
	set("tlsCA", o.TLSCA)
	if o.Port != 0 {
		m["port"] = itoa(int64(o.Port))
	}
	if o.PoolSize != 0 {
		m["poolSize"] = itoa(int64(o.PoolSize))
	}
	if o.ConnectTimeout != 0 {
		m["connectTimeout"] = o.ConnectTimeout.String()
	}
	if o.LockTimeout != 0 {
		m["lockTimeout"] = o.LockTimeout.String()
	}
	if o.NoCreate {
		m["create"] = "false"
	}
	return m
}

// OpenStore opens a store with opts (nil: every default, a server on
// 127.0.0.1:3306). storeOpts are the portable settings, as for store.Open.
// Unlike store.Open("mysql", ...), it needs no registry: two copies of the
// driver in one program cannot clash.
func OpenStore(ctx context.Context, opts *Options, storeOpts ...store.Option) (*store.Store, error) {
	fail := func(err error) error { return &store.Error{Op: "OpenStore", Key: "mysql", Err: err} }
	if opts == nil {
		opts = &Options{}
	}
	c, err := parseOptions(opts.options())
	if err != nil {
		return nil, fail(err)
	}
	d, err := open(ctx, c)
	if err != nil {
		return nil, fail(err)
	}
	st, err := store.OpenDriver(d, storeOpts...)
	if err != nil {
		d.Close()
		return nil, err
	}
	return st, nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
