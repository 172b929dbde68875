package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cosid-go/store/driver"
)

// Option defaults (the package documentation).
const (
	defaultEndpoints   = "localhost:2379"
	defaultPrefix      = "/cosid"
	defaultDialTimeout = 5 * time.Second
	defaultSessionTTL  = 60 * time.Second

	maxWait = 24 * time.Hour
)

// config is the parsed option map.
type config struct {
	endpoints   []string
	prefix      string // ends without '/'; keys are prefix + "/range/..."
	dialTimeout time.Duration
	sessionTTL  time.Duration // requested ttl of the lock session's etcd lease
	username    string
	password    string
	tls         *tls.Config // the TLS files' settings; nil: none given
	secure      bool        // TLS to every endpoint: https:// or TLS files
	create      bool
}

// parseOptions reads the option map; unknown keys and malformed values are
// refused, naming the key (the password's value is never shown).
func parseOptions(m map[string]string) (config, error) {
	o := driver.NewOptions(m)
	var c config
	endpoints := o.String("endpoints", defaultEndpoints)
	c.prefix = o.String("prefix", defaultPrefix)
	c.dialTimeout = o.Duration("dialTimeout", defaultDialTimeout, time.Millisecond, maxWait)
	c.sessionTTL = o.Duration("sessionTTL", defaultSessionTTL, 2*time.Second, maxWait)
	c.username = o.String("username", "")
	c.password = o.String("password", "")
	ca := o.String("tls.caFile", "")
	cert := o.String("tls.certFile", "")
	key := o.String("tls.keyFile", "")
	c.create = o.Bool(driver.OptionCreate, true)
	if err := o.Err(); err != nil {
		return config{}, err
	}
	bad := func(key, why string) error { return optionError(key, m[key], key == "password", why) }
	// An '@' anywhere is taken for credentials (user:password@host, with
	// or without a scheme), whose password may hold a quote, a space or a
	// comma that would end a redaction early or split it across
	// endpoints: nothing of the option is printed then.
	if strings.Contains(endpoints, "@") {
		return config{}, optionError("endpoints", endpoints, true,
			"holds an '@': credentials belong in username and password, not in an endpoint")
	}
	// The scheme decides TLS: url.Parse lowers it (HTTPS:// is https), and
	// so is it kept, for the client's choice and for dialOptions'.
	http, https := 0, 0
	for _, e := range strings.Split(endpoints, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if strings.Contains(e, "://") {
			u, err := url.Parse(e)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return config{}, bad("endpoints", fmt.Sprintf("%q is neither host:port nor an http(s) URL", driver.Redact(e)))
			}
			// The client dials host:port only: a path, query or fragment
			// means nothing to it, and may carry a token or a password
			// (?password=...) that errors and events would print with
			// the endpoint. Nothing of the option is shown.
			if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(e, "#") {
				return config{}, optionError("endpoints", endpoints, true,
					"holds a URL with a path, query or fragment, which the etcd client ignores: give scheme://host:port")
			}
			e = u.Scheme + e[len(u.Scheme):]
			if u.Scheme == "https" {
				https++
			} else {
				http++
			}
		}
		c.endpoints = append(c.endpoints, e)
	}
	if len(c.endpoints) == 0 {
		return config{}, bad("endpoints", "no endpoint")
	}
	// The client speaks TLS to every endpoint or to none: an http://
	// endpoint with TLS files would be plaintext without a word, and mixed
	// schemes are half wrong.
	switch {
	case http > 0 && https > 0:
		return config{}, bad("endpoints", "mixes http:// and https:// (the client speaks TLS to all or none)")
	case http > 0 && (ca != "" || cert != "" || key != ""):
		return config{}, bad("endpoints", "http:// with tls.* options: the connection would not be TLS; use https:// or host:port")
	}
	c.secure = https > 0 || ca != "" || cert != "" || key != ""
	if !strings.HasPrefix(c.prefix, "/") || strings.HasSuffix(c.prefix, "/") || strings.Contains(c.prefix, "//") {
		return config{}, bad("prefix", "must start with '/' and not end with '/' (for example /cosid)")
	}
	// A "." or ".." segment is a second spelling of another prefix to a
	// reader (etcd keys are plain strings): a separate store that looks
	// like the same one, or like one nested in another.
	for _, seg := range strings.Split(c.prefix[1:], "/") {
		if seg == "." || seg == ".." {
			return config{}, bad("prefix", "must not have a '.' or '..' segment")
		}
		// So are invisible characters and blank segments, as in keys.
		if !utf8.ValidString(seg) {
			return config{}, bad("prefix", "is not valid UTF-8")
		}
		if strings.TrimFunc(seg, unicode.IsSpace) == "" {
			return config{}, bad("prefix", "must not have a segment of white space only")
		}
		for _, r := range seg {
			if unicode.In(r, unicode.Cc, unicode.Cf) {
				return config{}, bad("prefix", fmt.Sprintf("must not contain the character %U", r))
			}
		}
	}
	if (c.username == "") != (c.password == "") {
		return config{}, bad("username", "username and password go together")
	}
	if ca != "" || cert != "" || key != "" {
		t, err := tlsConfig(ca, cert, key)
		if err != nil {
			return config{}, err
		}
		c.tls = t
	}
	return c, nil
}

// tlsConfig reads the TLS files now, so a wrong path fails at open.
func tlsConfig(ca, cert, key string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fileError("tls.caFile", ca, fileReason(err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fileError("tls.caFile", ca, "no PEM certificate in it")
		}
		cfg.RootCAs = pool
	}
	switch {
	case cert != "" && key != "":
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			shown := strconv.Quote(key)
			if notPath(key) {
				shown = "(not shown: PEM data, not a path)"
			}
			return nil, fileError("tls.certFile", cert, fmt.Sprintf("with tls.keyFile %s: %s", shown, fileReason(err)))
		}
		cfg.Certificates = []tls.Certificate{pair}
	case cert != "":
		return nil, fileError("tls.certFile", cert, "needs tls.keyFile")
	case key != "":
		return nil, fileError("tls.keyFile", key, "needs tls.certFile")
	}
	return cfg, nil
}

// notPath reports a file option that holds PEM data instead of a path (a
// key pasted where its file belongs): it is never shown.
func notPath(v string) bool {
	return strings.Contains(v, "-----BEGIN") || strings.ContainsAny(v, "\r\n")
}

func fileError(key, path, why string) error {
	if notPath(path) {
		why += " (the value is PEM data, not a file's path)"
	}
	return optionError(key, path, notPath(path), why)
}

// optionError refuses an option's value; a secret one is not kept in the
// error at all (a %#v of it would print its fields).
func optionError(key, value string, secret bool, why string) error {
	if secret {
		value = ""
	} else {
		value = driver.Redact(value)
	}
	return &driver.OptionError{Key: key, Value: value, Secret: secret, Reason: why}
}

// fileReason is why a file could not be read, without its path (which the
// error names once, or hides when it is PEM data).
func fileReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}
