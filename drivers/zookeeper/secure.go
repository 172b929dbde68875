package zookeeper

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// The security options: auth and tls.* describe the connection Open makes
// (New refuses them), acl the nodes a store creates.
const (
	optAuth          = "auth"
	optACL           = "acl"
	optTLS           = "tls"
	optTLSCAFile     = "tls.caFile"
	optTLSCertFile   = "tls.certFile"
	optTLSKeyFile    = "tls.keyFile"
	optTLSServerName = "tls.serverName"
)

var securityConnectionOptions = []string{optAuth, optTLS, optTLSCAFile, optTLSCertFile, optTLSKeyFile, optTLSServerName}

// secret reports the options whose values are never shown.
func secret(key string) bool { return key == optAuth }

// authEntry is one scheme:credentials entry of the auth option. Its
// String, like every error about it, shows the scheme only.
type authEntry struct {
	scheme string
	cred   []byte
	n      int // 1-based position in the option, for messages
}

func (a authEntry) String() string {
	return fmt.Sprintf("auth entry %d (scheme %q)", a.n, a.scheme)
}

// security is the parsed auth, acl and tls options.
type security struct {
	auth []authEntry
	acl  []zk.ACL
	tls  *tls.Config // nil: plaintext
}

// rawSecurity holds the option values until the option map has been checked
// for unknown keys.
type rawSecurity struct {
	ownConn                 bool
	auth, acl               string
	tls                     string
	ca, cert, key, svrName  string
	hasAuth, hasTLSSettings bool
}

// readSecurity declares the security options to o and takes their values.
func readSecurity(o *driver.Options, m map[string]string, ownConn bool) rawSecurity {
	r := rawSecurity{ownConn: ownConn, acl: o.String(optACL, "")}
	if !ownConn {
		return r
	}
	r.auth = o.String(optAuth, "")
	_, r.hasAuth = m[optAuth]
	r.tls = o.String(optTLS, "")
	r.ca = o.String(optTLSCAFile, "")
	r.cert = o.String(optTLSCertFile, "")
	r.key = o.String(optTLSKeyFile, "")
	r.svrName = o.String(optTLSServerName, "")
	r.hasTLSSettings = r.ca != "" || r.cert != "" || r.key != "" || r.svrName != ""
	return r
}

func badOption(key, value, why string) error {
	return &driver.OptionError{Key: key, Value: value, Secret: secret(key), Reason: why}
}

// parse checks the values and loads the TLS files.
func (r rawSecurity) parse() (security, error) {
	var sec security
	var err error
	if sec.auth, err = parseAuth(r.auth, r.hasAuth); err != nil {
		return security{}, err
	}
	useTLS, err := r.useTLS()
	if err != nil {
		return security{}, err
	}
	if useTLS {
		if sec.tls, err = r.tlsConfig(); err != nil {
			return security{}, err
		}
	}
	sec.acl, err = parseACL(r.acl, len(sec.auth) > 0, useTLS && r.cert != "", r.ownConn)
	return sec, err
}

// parseAuth splits the auth option: comma-separated scheme:credentials
// entries, digest credentials being user:password.
func parseAuth(v string, given bool) ([]authEntry, error) {
	if !given {
		return nil, nil
	}
	var out []authEntry
	for i, part := range strings.Split(v, ",") {
		n := i + 1
		scheme, cred, ok := strings.Cut(strings.TrimSpace(part), ":")
		switch {
		case !ok || scheme == "":
			return nil, badOption(optAuth, v, fmt.Sprintf("entry %d is not scheme:credentials", n))
		case cred == "":
			return nil, badOption(optAuth, v, fmt.Sprintf("entry %d (scheme %q) has no credentials", n, scheme))
		case scheme == "digest":
			if user, pass, ok := strings.Cut(cred, ":"); !ok || user == "" || pass == "" {
				return nil, badOption(optAuth, v, fmt.Sprintf("entry %d (scheme %q) is not digest:user:password", n, scheme))
			}
		}
		out = append(out, authEntry{scheme: scheme, cred: []byte(cred), n: n})
	}
	return out, nil
}

// parseACL reads the acl option: open, creator, or comma-separated
// scheme:id:perms entries. The default is creator when the session
// authenticates (auth, or a TLS client certificate), else open.
func parseACL(v string, hasAuth, hasCert, ownConn bool) ([]zk.ACL, error) {
	v = strings.TrimSpace(v)
	switch v {
	case "":
		if hasAuth {
			return zk.AuthACL(zk.PermAll), nil
		}
		return zk.WorldACL(zk.PermAll), nil
	case "open":
		return zk.WorldACL(zk.PermAll), nil
	case "creator":
		// On a caller's connection the caller added any auth; ZooKeeper
		// refuses the create (InvalidACL) if there is none.
		if ownConn && !hasAuth && !hasCert {
			return nil, badOption(optACL, v, "creator needs an authenticated session: set auth, or tls.certFile for a server with x509 authentication")
		}
		return zk.AuthACL(zk.PermAll), nil
	}
	var acl []zk.ACL
	for i, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		rest, perms, ok1 := cutLast(part, ":")
		scheme, id, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 || scheme == "" || id == "" {
			return nil, badOption(optACL, v, fmt.Sprintf("entry %d is not open, creator, or scheme:id:perms", i+1))
		}
		p, why := parsePerms(perms)
		if why != "" {
			return nil, badOption(optACL, v, fmt.Sprintf("entry %d: %s", i+1, why))
		}
		acl = append(acl, zk.ACL{Scheme: scheme, ID: id, Perms: p})
	}
	return acl, nil
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// parsePerms reads ZooKeeper's permission letters: c r w d a.
func parsePerms(s string) (int32, string) {
	if s == "" {
		return 0, "no permissions (want some of the letters crwda)"
	}
	var p int32
	for _, c := range s {
		switch c {
		case 'c':
			p |= zk.PermCreate
		case 'r':
			p |= zk.PermRead
		case 'w':
			p |= zk.PermWrite
		case 'd':
			p |= zk.PermDelete
		case 'a':
			p |= zk.PermAdmin
		default:
			return 0, fmt.Sprintf("permission %q is not one of the letters crwda", c)
		}
	}
	return p, ""
}

// PermString writes ZooKeeper permissions as the letters crwda, for tools.
func PermString(p int32) string {
	var b strings.Builder
	for _, x := range []struct {
		bit    int32
		letter byte
	}{{zk.PermCreate, 'c'}, {zk.PermRead, 'r'}, {zk.PermWrite, 'w'}, {zk.PermDelete, 'd'}, {zk.PermAdmin, 'a'}} {
		if p&x.bit != 0 {
			b.WriteByte(x.letter)
		}
	}
	return b.String()
}

// useTLS reads the tls option; TLS is on when it is true, or when it is
// unset and any tls.* option is given.
func (r rawSecurity) useTLS() (bool, error) {
	if r.tls == "" {
		return r.hasTLSSettings, nil
	}
	on, err := strconv.ParseBool(r.tls)
	if err != nil {
		return false, badOption(optTLS, r.tls, "not a boolean")
	}
	if !on && r.hasTLSSettings {
		return false, badOption(optTLS, r.tls, "tls.* options are given but tls is off")
	}
	return on, nil
}

// tlsConfig builds the client TLS configuration, reading the files now so
// that a missing or unreadable one fails Open, naming the option.
func (r rawSecurity) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: r.svrName}
	if r.ca != "" {
		pem, err := os.ReadFile(r.ca)
		if err != nil {
			return nil, badOption(optTLSCAFile, r.ca, err.Error())
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, badOption(optTLSCAFile, r.ca, "no PEM certificate in the file")
		}
	}
	switch {
	case r.cert != "" && r.key != "":
		pair, err := tls.LoadX509KeyPair(r.cert, r.key)
		if err != nil {
			// The error names neither file's contents.
			return nil, badOption(optTLSCertFile, r.cert, fmt.Sprintf("with tls.keyFile %q: %v", r.key, err))
		}
		cfg.Certificates = []tls.Certificate{pair}
	case r.cert != "":
		return nil, badOption(optTLSCertFile, r.cert, "needs tls.keyFile")
	case r.key != "":
		return nil, badOption(optTLSKeyFile, r.key, "needs tls.certFile")
	}
	return cfg, nil
}
