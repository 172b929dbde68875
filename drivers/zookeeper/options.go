package zookeeper

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// Option defaults (the package documentation, Options).
const (
	defaultConnectString           = "localhost:2181"
	defaultSessionTimeout          = 60 * time.Second
	defaultConnectionTimeout       = 15 * time.Second
	defaultBlockUntilConnectedWait = 10 * time.Second
	defaultRetryBaseSleepTime      = 100 * time.Millisecond
	defaultRetryMaxRetries         = 5
	defaultRetryMaxSleep           = 500 * time.Millisecond
	defaultRoot                    = "/cosid"

	maxWait    = 24 * time.Hour // the bound of every timeout option (go-zookeeper keeps ms in an int32)
	maxBackoff = time.Hour      // of retry.baseSleepTime and retry.maxSleep
	maxRetries = 1000
)

// connectionOptions describe the connection Open makes; New refuses them.
var connectionOptions = []string{"connectString", "connectionTimeout", "blockUntilConnectedWait"}

// config is the parsed option map.
type config struct {
	servers                 []string
	sessionTimeout          time.Duration
	connectionTimeout       time.Duration
	blockUntilConnectedWait time.Duration
	retry                   retryPolicy
	root                    string
	create                  bool     // a missing root may be created (session_identity.go)
	sec                     security // auth, acl, tls (secure.go)
}

// parseOptions reads the option map: all options for Open (ownConn), root
// and retry.* only for New.
func parseOptions(m map[string]string, ownConn bool) (config, error) {
	if !ownConn {
		if v, ok := m[driver.OptionCreate]; ok {
			return config{}, fmt.Errorf("option %q: value %q: applies only to Open, which checks the root when it connects; "+
				"New makes no connection to check it with: %w", driver.OptionCreate, v, driver.ErrInvalidArgument)
		}
		for _, k := range append(connectionOptions, securityConnectionOptions...) {
			if v, ok := m[k]; ok {
				return config{}, &driver.OptionError{Key: k, Value: v, Secret: secret(k),
					Reason: "applies only to the connection Open makes; configure the *zk.Conn given to New instead"}
			}
		}
	}
	o := driver.NewOptions(m)
	var cfg config
	var connectString string
	if ownConn {
		connectString = o.String("connectString", defaultConnectString)
		cfg.connectionTimeout = o.Duration("connectionTimeout", defaultConnectionTimeout, time.Millisecond, maxWait)
		cfg.blockUntilConnectedWait = o.Duration("blockUntilConnectedWait", defaultBlockUntilConnectedWait, 0, maxWait)
	}
	if ownConn {
		cfg.sessionTimeout = o.Duration("sessionTimeout", defaultSessionTimeout, time.Millisecond, maxWait)
	} else {
		// New: the caller's connection's session timeout, which locks need
		// (go-zookeeper does not expose it); 0 when not given.
		cfg.sessionTimeout = o.Duration("sessionTimeout", 0, time.Millisecond, maxWait)
	}
	cfg.retry.base = o.Duration("retry.baseSleepTime", defaultRetryBaseSleepTime, 0, maxBackoff)
	cfg.retry.maxRetries = o.Int("retry.maxRetries", defaultRetryMaxRetries, 0, maxRetries)
	cfg.retry.maxSleep = o.Duration("retry.maxSleep", defaultRetryMaxSleep, 0, maxBackoff)
	cfg.root = o.String("root", defaultRoot)
	cfg.create = true
	if ownConn {
		cfg.create = o.Bool(driver.OptionCreate, true)
	}
	rawSec := readSecurity(o, m, ownConn)
	if err := o.Err(); err != nil {
		return config{}, err
	}
	bad := func(key, why string) error {
		return &driver.OptionError{Key: key, Value: m[key], Reason: why}
	}
	if ownConn {
		servers, why := parseServers(connectString)
		if why != "" {
			return config{}, bad("connectString", why)
		}
		cfg.servers = servers
	}
	if why := checkRoot(cfg.root); why != "" {
		return config{}, bad("root", why)
	}
	if rawSec.hasAuth && cfg.blockUntilConnectedWait == 0 {
		return config{}, bad("blockUntilConnectedWait", "must be positive with auth: Open waits for the server to accept the credentials")
	}
	sec, err := rawSec.parse()
	if err != nil {
		return config{}, err
	}
	cfg.sec = sec
	return cfg, nil
}

// parseServers splits a connect string into host:port addresses.
func parseServers(s string) (servers []string, why string) {
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if strings.Contains(part, "/") {
			return nil, "a chroot suffix is not supported; use the root option"
		}
		host, port, err := net.SplitHostPort(part)
		if err != nil {
			if strings.Contains(part, ":") {
				return nil, fmt.Sprintf("%q is not host:port", part)
			}
			host, port = part, strconv.Itoa(zk.DefaultPort)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Sprintf("%q has no valid port", part)
		}
		if host == "" {
			return nil, fmt.Sprintf("%q has no host", part)
		}
		servers = append(servers, net.JoinHostPort(host, port))
	}
	if len(servers) == 0 {
		return nil, "no server"
	}
	return servers, ""
}

// checkRoot explains why root is not a usable absolute path, or returns "".
func checkRoot(root string) string {
	if !strings.HasPrefix(root, "/") {
		return "must be an absolute path starting with '/'"
	}
	if root == "/" || strings.HasSuffix(root, "/") {
		return "must not end with '/' (and cannot be '/' itself)"
	}
	if !utf8.ValidString(root) {
		return "is not valid UTF-8"
	}
	for _, seg := range strings.Split(root[1:], "/") {
		switch seg {
		case "":
			return "has an empty segment"
		case ".", "..":
			return fmt.Sprintf("has a %q segment", seg)
		}
		for _, r := range seg {
			if driver.ForbiddenInName(r) {
				return fmt.Sprintf("contains the character %U, which ZooKeeper refuses in paths", r)
			}
		}
	}
	return ""
}
