// Package zookeeper is the ZooKeeper driver of package store: ranges, slot
// leases and locks on ZooKeeper 3.8 and 3.9, through
// github.com/go-zookeeper/zk.
//
// # Opening
//
//	import _ "github.com/cosid-go/store/drivers/zookeeper"
//
//	st, err := store.Open("zookeeper", map[string]string{"connectString": "zk1:2181,zk2:2181"})
//
// Open makes its own connection and closes it with the store. To use a
// connection the application already has, call New and wrap the result with
// store.OpenDriver; closing that store leaves the connection open.
//
// # Options
//
//   - connectString (localhost:2181): comma-separated host:port list; a host
//     without a port gets 2181. A chroot suffix ("/app") is refused: use root.
//   - sessionTimeout (60s): the session timeout asked for; the server may cap it.
//   - connectionTimeout (15s): the limit for dialing one server, and again
//     for its answer to the session handshake (go-zookeeper alone would wait
//     up to 6.7 times the session timeout for a server that accepts the
//     connection but does not answer).
//   - blockUntilConnectedWait (10s): Open waits this long for a session, then
//     fails with an error naming the servers; 0 means Open does not wait.
//   - retry.baseSleepTime, retry.maxRetries, retry.maxSleep (100ms, 5, 500ms):
//     after a connection loss an operation sleeps base*2^n, at most maxSleep,
//     and retries at most maxRetries times, always within its context.
//   - root (/cosid): the absolute path under which every node lives.
//   - auth (none): comma-separated scheme:credentials entries added to the
//     session ("digest:user:password"). Open waits for the server to accept
//     each (blockUntilConnectedWait must be positive) and fails naming the
//     scheme of one it rejects; go-zookeeper sends them again after every
//     reconnect. Credentials never appear in errors or String output.
//   - acl (creator with auth, else open): the ACL of every node the store
//     creates: open (world:anyone, all permissions), creator (all
//     permissions to the session's authenticated ids), or comma-separated
//     scheme:id:perms entries with perms among the letters crwda. Existing
//     nodes keep their ACLs: the store never changes one. New takes acl.
//   - tls (on when a tls.* option is set), tls.caFile (system roots),
//     tls.certFile and tls.keyFile (none), tls.serverName (each server's
//     host): TLS through crypto/tls, to the servers' secureClientPort; the
//     files are PEM and read by Open.
//   - sessionTimeout, for New: the session timeout the caller's connection
//     negotiated (or less); Lock needs it.
//
// Durations take Go syntax (500ms, 3s) or a bare number of milliseconds. An
// unknown option is an error that lists the known ones. New accepts only
// root, acl, the retry options and sessionTimeout (which then describes the
// caller's connection): the other connection options describe a connection
// New does not make, so passing one is an error rather than silently
// ignored.
//
// # Nodes
//
// A range key is the node {root}/range/{key}; its data is the next value in
// decimal, with ":sealed" appended once sealed ("1200", "1200:sealed"). A key
// containing '/' gets parent nodes with empty data, which are not keys (until
// used as keys themselves, starting at 0). Keys lists the nodes holding a
// value and fails with ErrCorrupt on data that does not parse, so that a
// migration never silently misses a key. Nodes, and the missing ancestors of
// root, are created with the acl option's ACL.
//
// ZooKeeper checks paths as UTF-16 and refuses surrogates, so a key with a
// character above U+FFFF is refused with ErrInvalidArgument.
//
// Range nodes must never be deleted while any store uses their key: a store
// refuses a key whose node it used and that vanished or was recreated
// (ErrRecreated), but a write it already made cannot be taken back.
//
// # Guarantees
//
// A store remembers, per key, the node version and creation zxid it last
// wrote, and advances a key with one compare-and-set on that version: one
// round trip per Next while it is the only writer. Goroutines of one store
// take turns on a key rather than race each other. A write whose outcome is
// unknown (the connection was lost, or the context ended, while it was in
// flight) is never counted as this store's: its range is skipped, never
// handed out. A node at version -1 (a 3.8.0 server can wrap a version to
// it, ZOOKEEPER-4743) is refused rather than written, since ZooKeeper reads
// an expected version of -1 as "any version".
//
// go-zookeeper's calls take no context. Each call runs on a goroutine of
// its own, so an operation returns as soon as its context ends; the call
// finishes in the background, and Close waits for it.
//
// # Slot leases
//
// A namespace is the node {root}/slot/{ns}, holding its settings as
// name=value lines ("limit=1024", "tolerance=1000", and after a purge
// "fence_floor=N"), with a child .clock
// that every acquire writes: the mtime of that write is the acquire's now.
// Slot n is the node {root}/slot/{ns}/{n}, holding the lines owner,
// incarnation, last_owner, fence, ttl, tolerance, floor, expires_min,
// ceiling_min and next_floor (durations and times in milliseconds); a free
// slot has an empty owner. Lines of other names are kept as they are when
// the store rewrites a node; blank lines and the order of the lines do not
// matter, so a slot can be restored by hand. {root}/owner/{ns}/{owner}
// lists the slots the owner key held last, most recent first, comma
// separated, at most 8; it is written in the same multi as each acquire,
// and it is only a hint: deleting it is always safe.
//
// Lease times come from the server's mtime, never from this process's
// clock: expiresAt = max(expires_min, mtime+ttl) and ceiling =
// max(ceiling_min, expiresAt+tolerance), mtime being the slot's last write.
// A slot node is a driver.SlotRecord whose Written is the node's mtime; the
// slot rules are that type's methods.
//
// When the owner's last slot or the preferred slot is free, an acquire
// takes 3 round trips: the .clock write with reads of the namespace and the
// owner index; reads of the owner's last slots and the preferred slot; one
// multi that compare-and-sets (or creates) the slot and writes the index.
// Otherwise it searches the lowest free slot in batches of 32, 64, 128,
// then 256 slots, one round trip per batch (the reads of a batch are
// pipelined on the connection): a namespace of 1024 slots takes 7. Renew
// and Release are one compare-and-set on the version the lease carries;
// after a conflict they read the slot, and the term is still the lease's
// only if owner, incarnation and fence match, on a node of the same czxid.
// An acquire whose answer was lost is settled the same way. Goroutines of
// one store take turns to acquire in a namespace.
//
// Slot data that does not parse is never overwritten: the calls that need
// it fail with ErrCorrupt naming the path, and an acquire passes over the
// slot (naming it if it then finds no free slot). Run-time code never
// deletes a slot node; a slot node deleted or recreated under a lease ends
// the lease (ErrLeaseLost, with ErrRecreated).
//
// Purge (driver.Purger) deletes every node below root, children first,
// each on the version it saw, and stops if one changes meanwhile. First it
// writes the highest slot fence it found into root's data, the line
// slot_fence_floor=N; a namespace created later copies it into its node
// (fence_floor=N), and its slots' first terms get fences above it, so no
// slot fence repeats across a purge (lock fences are czxids, which never
// do).
//
// # Locks
//
// A lock name is the container node {root}/lock/{name}: the server deletes
// it once it has no waiters (fences, being czxids, still only grow), and
// Locks lists the names that have a node. Each Lock call adds an ephemeral
// sequential node _c_{guid}-lock-{seq} under it, holding the owner key. The
// node with the lowest sequence number holds the lock (sequence numbers are
// compared with wrap-around, as ZooKeeper's 32-bit counter wraps); each
// waiter watches only the node just before its own, so a release wakes one
// waiter, and waiters of one store share one watch per node. The fence is
// the holder node's czxid. A Lock call that fails, or whose context ends,
// removes its node before it returns, on a context of its own; after a
// create whose answer was lost it finds its node by the GUID, and a create
// answered after its removal gave up is deleted then. Unlock deletes only
// its own node. Lock waits are bounded by the caller's context only; a
// waiter whose node died with its session queues again.
//
// Lost closes when the session expires or is replaced, when the store
// closes, or when requests through the leader no longer prove the session
// alive (SPEC 5): while the store holds a lock, one loop sends a sync every
// 0.3 T (T the negotiated session timeout), and a hold is trusted until the
// send time of a confirmed request + T - T/20, for a request that a later
// confirmed one, sent at least 0.3 T after it, proves the leader counted;
// a lone confirmation counts for 5T/12 - T/20. Nothing heard from the
// connected server counts: a follower cut off from the leader keeps
// answering pings while the leader expires the session. A store made by
// Open reads T off its connection; a store made by New is told it (option
// sessionTimeout) and refuses to lock without it, and checks the caller's
// connection every 50ms for session changes while it has lock nodes. Its
// Close removes its lock nodes, since the caller's session outlives it. The
// node of a hold lost while its session may live on is removed in the
// background once the connection is back.
package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

func init() { store.Register("zookeeper", Open) }

// Option defaults (SPEC 7).
const (
	defaultConnectString           = "localhost:2181"
	defaultSessionTimeout          = 60 * time.Second
	defaultConnectionTimeout       = 15 * time.Second
	defaultBlockUntilConnectedWait = 10 * time.Second
	defaultRetryBaseSleepTime      = 100 * time.Millisecond
	defaultRetryMaxRetries         = 5
	defaultRetryMaxSleep           = 500 * time.Millisecond
	defaultRoot                    = "/cosid"
)

// connectionOptions describe the connection Open makes; New refuses them.
var connectionOptions = []string{"connectString", "connectionTimeout", "blockUntilConnectedWait"}

// Store is an open ZooKeeper store. It implements driver.Store,
// driver.RangeStore, driver.SlotStore, driver.Locker, and the optional
// driver.SlotSeeder and driver.Purger, and is safe for concurrent use.
type Store struct {
	conn  *zk.Conn
	root  string
	retry retryPolicy
	acl   []zk.ACL // set on every node the store creates (the acl option)

	// Set only when the store made conn (Open) and so must close it.
	owned  bool
	events <-chan zk.Event // closed by go-zookeeper once its goroutines are done
	dialer *dialer

	state      atomic.Int32  // last session state reported by the event callback
	hasSession chan struct{} // closed at the first session
	sessionOne sync.Once

	closing   chan struct{} // closed by Close: calls in flight return at once
	closeOnce sync.Once
	callsMu   sync.RWMutex // orders calls.Add against Close's calls.Wait
	closed    bool
	calls     sync.WaitGroup // goroutines running go-zookeeper calls

	keysMu sync.Mutex
	keys   map[string]*rangeKey

	slotTurns slotTurnMap  // acquires take turns per namespace (acquire.go)
	slotZxid  atomic.Int64 // the highest mzxid of a slot node read or written (see seeSlotZxid)

	lk lockState // lock nodes and the session as the Locker sees it (lockwatch.go)
}

var _ driver.RangeStore = (*Store)(nil)

// Open opens a store on a connection it makes from options and closes with
// the store. It is the driver's factory (see the package documentation for
// the options). It waits up to blockUntilConnectedWait for a session.
func Open(options map[string]string) (driver.Store, error) {
	return open(options, nil)
}

// open is Open with a hook that wraps each network connection, for tests
// that watch the traffic.
func open(options map[string]string, wrap func(net.Conn) net.Conn) (*Store, error) {
	cfg, err := parseOptions(options, true)
	if err != nil {
		return nil, err
	}
	s := newStore(cfg)
	s.owned = true
	wrap = s.lk.sniff(cfg.sessionTimeout, wrap) // the Locker reads the negotiated session timeout off the wire
	s.dialer = newDialer(cfg.connectionTimeout, cfg.sec.tls, wrap)
	s.hasSession = make(chan struct{})
	conn, events, err := zk.Connect(cfg.servers, cfg.sessionTimeout,
		zk.WithDialer(s.dialer.dial),
		zk.WithEventCallback(s.onEvent),
		zk.WithLogInfo(false),
		// The client logs every reconnect attempt to the process's standard
		// logger; the store reports failures through its own errors instead.
		zk.WithLogger(quietLogger{}))
	if err != nil {
		s.dialer.close()
		return nil, fmt.Errorf("zookeeper: connect to %s: %w", strings.Join(cfg.servers, ","), err)
	}
	s.conn, s.events = conn, events
	if cfg.blockUntilConnectedWait == 0 {
		return s, nil
	}
	wait, cancel := context.WithTimeout(context.Background(), cfg.blockUntilConnectedWait)
	defer cancel()
	select {
	case <-s.hasSession:
		if err := s.addAuth(wait, cfg.sec.auth); err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	case <-wait.Done():
	}
	state := zk.State(s.state.Load())
	last := s.dialer.lastError()
	s.Close()
	msg := fmt.Sprintf("zookeeper: no session with any of %s within %v (blockUntilConnectedWait); state %v",
		strings.Join(cfg.servers, ","), cfg.blockUntilConnectedWait, state)
	if last != nil {
		msg += "; last failure: " + last.Error()
	}
	return nil, errors.New(msg)
}

// New returns a store on conn, a connection the caller made and still owns:
// closing the store leaves it open, and the caller closes it after the
// store. options may set root, acl, the retry options and sessionTimeout: the
// session timeout conn negotiated (or less), which Lock needs for its
// liveness rule and go-zookeeper does not expose; without it Lock fails.
// New does not wait for a session; operations wait for one within their
// context.
func New(conn *zk.Conn, options map[string]string) (*Store, error) {
	if conn == nil {
		return nil, fmt.Errorf("zookeeper: New: nil *zk.Conn: %w", driver.ErrInvalidArgument)
	}
	cfg, err := parseOptions(options, false)
	if err != nil {
		return nil, err
	}
	s := newStore(cfg)
	s.conn = conn
	s.lk.requested = cfg.sessionTimeout
	return s, nil
}

func newStore(cfg config) *Store {
	return &Store{
		root:    cfg.root,
		retry:   cfg.retry,
		acl:     cfg.sec.acl,
		closing: make(chan struct{}),
		keys:    map[string]*rangeKey{},
	}
}

// onEvent follows the session state. go-zookeeper's event channel drops
// events when full, so the callback, which sees every event, is used
// instead. It must not block.
func (s *Store) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	s.state.Store(int32(ev.State))
	s.sessionEvent(ev.State) // the Locker's Lost signal (lockwatch.go)
	if ev.State == zk.StateHasSession {
		s.sessionOne.Do(func() { close(s.hasSession) })
	}
}

// Close makes calls in flight return ErrClosed, waits for the goroutines
// the store started and, if the store made its connection, closes it and
// waits until go-zookeeper's own goroutines have ended. A caller's
// connection is left open; Close then still waits for the requests it sent
// on it, which go-zookeeper always completes (with an answer, or an error
// once the connection is lost). Closing twice returns nil.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.callsMu.Lock()
		s.closed = true
		close(s.closing)
		s.callsMu.Unlock()
		s.closeLocks() // every hold is lost; on a caller's connection, lock nodes are removed
		if s.owned {
			s.conn.Close()
			// A handshake in progress does not watch for Close; closing
			// its socket ends it.
			s.dialer.close()
			for range s.events {
			}
		}
		s.calls.Wait()
		s.waitLocks()
	})
	return nil
}

// config is the parsed option map.
type config struct {
	servers                 []string
	sessionTimeout          time.Duration
	connectionTimeout       time.Duration
	blockUntilConnectedWait time.Duration
	retry                   retryPolicy
	root                    string
	sec                     security // auth, acl, tls (secure.go)
}

// parseOptions reads the option map: all options for Open (ownConn), root
// and retry.* only for New.
func parseOptions(m map[string]string, ownConn bool) (config, error) {
	if !ownConn {
		for _, k := range append(connectionOptions, securityConnectionOptions...) {
			if v, ok := m[k]; ok {
				return config{}, fmt.Errorf("option %q: value %s: applies only to the connection Open makes; "+
					"configure the *zk.Conn given to New instead: %w", k, shown(k, v), driver.ErrInvalidArgument)
			}
		}
	}
	o := driver.NewOptions(m)
	var cfg config
	var connectString string
	if ownConn {
		connectString = o.String("connectString", defaultConnectString)
		cfg.connectionTimeout = o.Duration("connectionTimeout", defaultConnectionTimeout)
		cfg.blockUntilConnectedWait = o.Duration("blockUntilConnectedWait", defaultBlockUntilConnectedWait)
	}
	if ownConn {
		cfg.sessionTimeout = o.Duration("sessionTimeout", defaultSessionTimeout)
	} else {
		// New: the caller's connection's session timeout, which locks need
		// (go-zookeeper does not expose it); 0 when not given.
		cfg.sessionTimeout = o.Duration("sessionTimeout", 0)
	}
	cfg.retry.base = o.Duration("retry.baseSleepTime", defaultRetryBaseSleepTime)
	cfg.retry.maxRetries = o.Int("retry.maxRetries", defaultRetryMaxRetries)
	cfg.retry.maxSleep = o.Duration("retry.maxSleep", defaultRetryMaxSleep)
	cfg.root = o.String("root", defaultRoot)
	rawSec := readSecurity(o, m, ownConn)
	if err := o.Err(); err != nil {
		return config{}, err
	}
	bad := func(key, why string) error {
		return fmt.Errorf("option %q: value %q: %s: %w", key, m[key], why, driver.ErrInvalidArgument)
	}
	if ownConn {
		servers, why := parseServers(connectString)
		if why != "" {
			return config{}, bad("connectString", why)
		}
		cfg.servers = servers
		if cfg.connectionTimeout <= 0 {
			return config{}, bad("connectionTimeout", "must be positive")
		}
	}
	if _, set := m["sessionTimeout"]; (set || ownConn) && cfg.sessionTimeout < time.Millisecond {
		return config{}, bad("sessionTimeout", "must be at least 1ms")
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

// quietLogger drops go-zookeeper's log lines.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}
