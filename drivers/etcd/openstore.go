package etcd

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// Options configure a store opened with OpenStore: the options of the
// package documentation. The zero value means every default.
type Options struct {
	// Endpoints are the members' client URLs or host:port; default
	// localhost:2379.
	Endpoints []string
	// Prefix is put before every key the store writes; default /cosid.
	Prefix string
	// Username and Password authenticate with etcd's auth, both or neither.
	Username, Password string
	// TLSCAFile, TLSCertFile and TLSKeyFile turn TLS on: the CA to trust,
	// and the client's certificate and key (refused with an http://
	// endpoint, which would not be TLS).
	TLSCAFile, TLSCertFile, TLSKeyFile string
	// DialTimeout bounds all OpenStore does: the connection to a member
	// (a TLS failure ends it at once) and the reads of the store's
	// identity; default 5s.
	DialTimeout time.Duration
	// SessionTTL is the TTL asked for the lease the store's locks hang on
	// (whole seconds, at least 2s); default 60s. A crashed holder's locks
	// are free after it.
	SessionTTL time.Duration
	// NoCreate opens only an existing store (the option create=false).
	NoCreate bool
}

// Format prints the options with every secret hidden, for every verb: a
// program that logs its configuration must not log the password, the
// credentials of an endpoint URL (which OpenStore refuses), or a key's PEM
// pasted where its file's path belongs.
func (o Options) Format(f fmt.State, _ rune) {
	type shown Options // without this method
	p := shown(o)
	if p.Password != "" {
		p.Password = "(redacted)"
	}
	p.Endpoints = make([]string, len(o.Endpoints))
	for i, e := range o.Endpoints {
		p.Endpoints[i] = hideCredentials(e)
	}
	for _, v := range []*string{&p.TLSCAFile, &p.TLSCertFile, &p.TLSKeyFile} {
		if notPath(*v) {
			*v = "(PEM data not shown)"
		}
	}
	fmt.Fprintf(f, "%+v", p)
}

// hideCredentials hides everything of an endpoint before its last '@'
// (after an http(s) scheme): a password may hold any character, an '@' or
// "://" too, but a host none.
func hideCredentials(e string) string {
	at := strings.LastIndexByte(e, '@')
	if at >= 0 {
		scheme := ""
		if i := strings.Index(e, "://"); i >= 0 && i < at && (strings.EqualFold(e[:i], "http") || strings.EqualFold(e[:i], "https")) {
			scheme = e[:i+3]
		}
		e = scheme + "(credentials not shown)" + e[at:]
	}
	// After the host, a path, query or fragment may carry a token too
	// (Open refuses them).
	scheme, rest := "", e
	if i := strings.Index(e, "://"); i >= 0 {
		scheme, rest = e[:i+3], e[i+3:]
	}
	if j := strings.IndexAny(rest, "/?#"); j >= 0 && rest[j:] != "/" {
		rest = rest[:j] + "(path not shown)"
	}
	return scheme + rest
}

// LogValue is the options as Format prints them, for log/slog.
func (o Options) LogValue() slog.Value { return slog.StringValue(fmt.Sprint(o)) }

// OpenStore connects within ctx and opens a store; opts may be nil.
// storeOpts are the portable settings, as for store.Open.
func OpenStore(ctx context.Context, opts *Options, storeOpts ...store.Option) (*store.Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	m := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	set("endpoints", strings.Join(o.Endpoints, ","))
	set("prefix", o.Prefix)
	set("username", o.Username)
	set("password", o.Password)
	set("tls.caFile", o.TLSCAFile)
	set("tls.certFile", o.TLSCertFile)
	set("tls.keyFile", o.TLSKeyFile)
	for _, d := range []struct {
		field, key string
		v          time.Duration
	}{{"DialTimeout", "dialTimeout", o.DialTimeout}, {"SessionTTL", "sessionTTL", o.SessionTTL}} {
		if d.v < 0 {
			return nil, fmt.Errorf("etcd.Options.%s %v: negative: %w", d.field, d.v, driver.ErrInvalidArgument)
		}
		if d.v > 0 {
			m[d.key] = d.v.String()
		}
	}
	if o.NoCreate {
		m[driver.OptionCreate] = "false"
	}
	cfg, err := parseOptions(m)
	if err != nil {
		return nil, &store.Error{Op: "OpenStore", Key: "etcd", Err: err}
	}
	d := newStore(cfg, nil)
	if err := d.Connect(ctx); err != nil {
		d.Close()
		return nil, &store.Error{Op: "OpenStore", Key: "etcd", Err: err}
	}
	st, err := store.OpenDriver(d, storeOpts...)
	if err != nil {
		d.Close()
		return nil, err
	}
	return st, nil
}
