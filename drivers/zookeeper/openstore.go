package zookeeper

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// Options configure a store opened with OpenStore on a caller's connection:
// the root, acl, retry and sessionTimeout options of the package
// documentation. The zero value means every default.
type Options struct {
	// Root is the absolute path under which every node lives; default /cosid.
	Root string
	// ACL is set on every node the store creates; nil means world:anyone
	// with every permission (zk.WorldACL(zk.PermAll)). zk.AuthACL(zk.PermAll)
	// gives the nodes to the identities the connection authenticated.
	// Existing nodes keep their ACLs: the store never changes one.
	ACL []zk.ACL
	// SessionTimeout is the session timeout conn negotiated, or less. Lock
	// needs it for its liveness rule (go-zookeeper does not expose it) and
	// fails without it; ranges and slots do not. Keep it at or below the
	// maxSessionTimeout of every ensemble member, also after a config
	// change: the store does not see conn's reconnects, and one granted a
	// shorter timeout would leave Lost late (two holders).
	SessionTimeout time.Duration
	// After a connection loss an operation sleeps RetryBaseSleepTime*2^n,
	// at most RetryMaxSleep, and retries at most RetryMaxRetries times,
	// always within its context. Zero means the default (100ms, 500ms, 5);
	// a negative RetryMaxRetries means no retry.
	RetryBaseSleepTime time.Duration
	RetryMaxSleep      time.Duration
	RetryMaxRetries    int
}

// OpenStore opens a store on conn, a connection the caller made and still
// owns: closing the store leaves it open, and the caller closes it after the
// store. opts may be nil (every default). storeOpts are the portable
// settings, as for store.Open. OpenStore does not wait for a session; each
// operation waits for one within its own context.
func OpenStore(conn *zk.Conn, opts *Options, storeOpts ...store.Option) (*store.Store, error) {
	fail := func(err error) error { return &store.Error{Op: "OpenStore", Key: "zookeeper", Err: err} }
	var o Options
	if opts != nil {
		o = *opts
	}
	m, err := o.optionMap()
	if err != nil {
		return nil, fail(err)
	}
	d, err := newOnConn(conn, m)
	if err != nil {
		return nil, fail(err)
	}
	if o.ACL != nil {
		d.acl = slices.Clone(o.ACL)
	}
	st, err := store.OpenDriver(d, storeOpts...)
	if err != nil {
		d.Close()
		return nil, err
	}
	return st, nil
}

// optionMap is o as the option map New parses, so that both paths check
// values alike; the ACL, which the map writes as text, is checked here.
func (o Options) optionMap() (map[string]string, error) {
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("zookeeper.Options.%s %v: %s: %w", field, v, why, driver.ErrInvalidArgument)
	}
	m := map[string]string{}
	if o.Root != "" {
		m["root"] = o.Root
	}
	for _, d := range []struct {
		field, key string
		v          time.Duration
	}{
		{"SessionTimeout", "sessionTimeout", o.SessionTimeout},
		{"RetryBaseSleepTime", "retry.baseSleepTime", o.RetryBaseSleepTime},
		{"RetryMaxSleep", "retry.maxSleep", o.RetryMaxSleep},
	} {
		switch {
		case d.v < 0:
			return nil, bad(d.field, d.v, "negative")
		case d.v > 0:
			m[d.key] = d.v.String()
		}
	}
	switch {
	case o.RetryMaxRetries < 0:
		m["retry.maxRetries"] = "0"
	case o.RetryMaxRetries > 0:
		m["retry.maxRetries"] = strconv.Itoa(o.RetryMaxRetries)
	}
	if o.ACL != nil && len(o.ACL) == 0 {
		return nil, bad("ACL", "[]", "empty: ZooKeeper refuses to create a node without an ACL (nil means the default)")
	}
	for i, a := range o.ACL {
		if a.Scheme == "" || a.Perms == 0 || a.Perms&^zk.PermAll != 0 {
			return nil, bad(fmt.Sprintf("ACL[%d]", i), ACLEntry(a), "needs a scheme and permissions among crwda")
		}
	}
	return m, nil
}
