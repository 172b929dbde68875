package mysql

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/cosid-go/store/driver"
)

// config is a store's options, checked.
type config struct {
	cfg         *mysql.Config // the connections', without a database
	database    string
	poolSize    int
	lockTimeout time.Duration
	create      bool
}

// maxPoolSize bounds poolSize, far above any server's max_connections.
const maxPoolSize = 10000

// maxDatabase is the servers' limit on a database name.
const maxDatabase = 64

// defaultDatabase holds the tables when neither the database option nor
// the dsn names one.
const defaultDatabase = "cosid"

// tlsModes are the values of the tls option.
var tlsModes = []string{"false", "true", "skip-verify", "preferred"}

// parseOptions checks options (see the package documentation).
func parseOptions(options map[string]string) (*config, error) {
	o := driver.NewOptions(options)
	dsn := o.String("dsn", "")
	fields := map[string]string{}
	for _, f := range []string{"host", "port", "user", "password", "tls", "tlsCA"} {
		if _, given := options[f]; given {
			fields[f] = o.String(f, "")
		}
	}
	database := o.String("database", "")
	poolSize := o.Int("poolSize", 10, 1, maxPoolSize)
	connectTimeout := o.Duration("connectTimeout", 10*time.Second, 0, time.Hour)
	lockTimeout := o.Duration("lockTimeout", 10*time.Second, 100*time.Millisecond, 24*time.Hour)
	create := o.Bool(driver.OptionCreate, true)
	if err := o.Err(); err != nil {
		return nil, err
	}
	cfg := mysql.NewConfig()
	if dsn != "" {
		var err error
		if cfg, err = mysql.ParseDSN(dsn); err != nil {
			// Its message may quote the dsn: say only what failed.
			return nil, &driver.OptionError{Key: "dsn", Value: dsn, Secret: true,
				Reason: "cannot be parsed as a MySQL data source name ([user[:password]@][net[(addr)]]/dbname[?param=value])"}
		}
	}
	if err := applyFields(cfg, fields); err != nil {
		return nil, err
	}
	if database == "" {
		database = cfg.DBName
		if database == "" {
			database = defaultDatabase
		}
	}
	if err := checkDatabase(database); err != nil {
		return nil, &driver.OptionError{Key: "database", Value: database, Reason: err.Error()}
	}
	// The connections name no database, so that one missing can be
	// created; every statement names it (Dialect.Prefix).
	cfg.DBName = ""
	cfg.Timeout = connectTimeout
	// What the dialect relies on, whatever the dsn says: parameters
	// interpolated (one round trip a statement), affected rows counted as
	// changed (not found) rows, one statement per call.
	cfg.InterpolateParams, cfg.ClientFoundRows, cfg.MultiStatements = true, false, false
	cfg.ParseTime, cfg.Loc = false, time.UTC
	return &config{cfg: cfg, database: database, poolSize: poolSize, lockTimeout: lockTimeout, create: create}, nil
}

// applyFields puts the separate connection options into cfg, refusing one
// that is empty (it would silently mean the default) or cannot work.
func applyFields(cfg *mysql.Config, f map[string]string) error {
	for _, k := range []string{"host", "port", "user", "password", "tls", "tlsCA"} {
		if v, ok := f[k]; ok && v == "" {
			return &driver.OptionError{Key: k, Value: v, Secret: k == "password", Reason: "empty; leave the option out for the default"}
		}
	}
	if v, ok := f["user"]; ok {
		cfg.User = v
	}
	if v, ok := f["password"]; ok {
		cfg.Passwd = v
	}
	host, port := "", ""
	if cfg.Net == "tcp" || cfg.Net == "" {
		host, port, _ = net.SplitHostPort(cfg.Addr)
	}
	if v, ok := f["port"]; ok {
		if _, err := driver.ParseInt(v, 1, 65535); err != nil {
			return &driver.OptionError{Key: "port", Value: v, Reason: err.Error()}
		}
		port = v
	}
	if v, ok := f["host"]; ok {
		if strings.HasPrefix(v, "/") {
			cfg.Net, cfg.Addr = "unix", v
			if _, given := f["port"]; given {
				return &driver.OptionError{Key: "port", Value: f["port"], Reason: "host " + strconv.Quote(v) + " is a Unix socket, which has no port"}
			}
		} else {
			host = v
		}
	}
	if cfg.Net != "unix" && (f["host"] != "" || f["port"] != "") {
		if host == "" {
			host = "127.0.0.1"
		}
		if port == "" {
			port = "3306"
		}
		cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(host, port)
	}
	if v, ok := f["tls"]; ok {
		if !slices.Contains(tlsModes, v) {
			return &driver.OptionError{Key: "tls", Value: v, Reason: "not one of " + strings.Join(tlsModes, ", ")}
		}
		cfg.TLS, cfg.TLSConfig, cfg.AllowFallbackToPlaintext = nil, v, false
	}
	if v, ok := f["tlsCA"]; ok {
		pem, err := os.ReadFile(v)
		if err != nil {
			return &driver.OptionError{Key: "tlsCA", Value: v, Reason: err.Error()}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return &driver.OptionError{Key: "tlsCA", Value: v, Reason: "holds no PEM certificate"}
		}
		if mode := f["tls"]; mode == "skip-verify" || mode == "preferred" || mode == "false" {
			return &driver.OptionError{Key: "tlsCA", Value: v, Reason: "verifies the server, which tls=" + mode + " does not"}
		}
		cfg.TLS, cfg.TLSConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, "custom"
	}
	return nil
}

// checkDatabase accepts a database name of ASCII letters, digits, '_' and
// '-', at most maxDatabase bytes: nothing the server would refuse, and
// nothing that could read as SQL or as a marker of a statement template.
func checkDatabase(name string) error {
	if len(name) > maxDatabase {
		return fmt.Errorf("%d bytes, over the server's %d", len(name), maxDatabase)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("has %q: only ASCII letters, digits, '_' and '-' are allowed", c)
		}
	}
	return nil
}

// server is the server's address, for messages.
func (c *config) server() string {
	if c.cfg.Addr == "" {
		return "127.0.0.1:3306"
	}
	return c.cfg.Addr
}
