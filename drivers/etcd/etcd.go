package etcd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

func init() { store.Register("etcd", fromOptions) }

// fromOptions is the registry's factory: it parses the options and
// connects later, in Connect (bounded by store.OpenContext).
func fromOptions(m map[string]string) (driver.Store, error) {
	cfg, err := parseOptions(m)
	if err != nil {
		return nil, err
	}
	return newStore(cfg, nil), nil
}

// etcdStore is a store's connection, which its capabilities share
// (driverStore): a client (its own or the caller's), the goroutines it
// started, and what it reports.
type etcdStore struct {
	cfg     config
	cli     *clientv3.Client
	ownCli  bool
	dialOpt []grpc.DialOption // tests count round trips with an interceptor
	// lateAnswer, if set, holds an answer of a call with attempt
	// deadlines until that deadline passed when it says so (tests).
	lateAnswer func(req any) bool
	// heldRead, if set, holds the answer of a read waited for (awaitRead)
	// until the channel it returns for it closes (tests); nil: not held.
	heldRead func(req any) <-chan struct{}
	notify   atomic.Pointer[func(driver.Event)]
	answer   atomic.Int64 // unix nanos of the last answer from a server
	latency  latency      // the last answers' latencies, for attempt deadlines (attempts.go)
	health   health       // connection events and failures (events.go)
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	goMu     sync.Mutex // guards goDone, so no goroutine starts once Close waits
	goDone   bool
	closing  chan struct{}
}

// Notify sets the event sink (driver.Notifier).
func (s *etcdStore) Notify(f func(driver.Event)) { s.notify.Store(&f) }

func (s *etcdStore) emit(e driver.Event) {
	if f := s.notify.Load(); f != nil {
		(*f)(e)
	}
}

// Connect makes the client, if the store has none, and checks the store's
// metadata key: creating it (with the store's identity) unless create is
// false, when a missing one is ErrNotFound.
//
// dialTimeout bounds all of it, not only the wait for a connection: a
// member without quorum accepts one and then answers no read (the client
// retries a read for minutes).
func (s *etcdStore) Connect(ctx context.Context) error {
	octx, cancel := context.WithTimeoutCause(ctx, s.cfg.dialTimeout, errOpenBound)
	defer cancel()
	return s.connect(octx)
}

func (s *etcdStore) connect(ctx context.Context) error {
	s.health.down.Store(true) // Connected comes with the first answer
	if s.cli == nil {
		cli, err := clientv3.New(clientv3.Config{
			Endpoints:   s.cfg.endpoints,
			DialTimeout: s.cfg.dialTimeout,
			Username:    s.cfg.username,
			Password:    s.cfg.password,
			TLS:         s.cfg.tls,
			Logger:      zap.NewNop(),
			Context:     s.ctx,
			// Pings on idle connections, so a dead one is found and
			// replaced while no call is in flight.
			DialKeepAliveTime:    10 * time.Second,
			DialKeepAliveTimeout: 5 * time.Second,
			DialOptions:          s.dialOptions(),
		})
		if err != nil {
			return s.clientError(err)
		}
		s.cli = cli
	}
	if err := s.awaitReady(ctx); err != nil {
		return err
	}
	if err := s.checkNested(ctx); err != nil {
		return s.openBound(ctx, err)
	}
	if _, err := s.storeID(ctx, s.cfg.create); err != nil {
		return s.openBound(ctx, err)
	}
	s.connUp()
	s.spawn(func() { s.watchConn(s.cli.ActiveConnection()) })
	return nil
}

// openBound says that a failure of Open's reads came at dialTimeout.
func (s *etcdStore) openBound(ctx context.Context, err error) error {
	if context.Cause(ctx) == errOpenBound {
		return fmt.Errorf("no store read within dialTimeout %v: %w", s.cfg.dialTimeout, err)
	}
	return err
}

func (s *etcdStore) key(parts ...string) string {
	return s.cfg.prefix + "/" + strings.Join(parts, "/")
}

// Ping makes one round trip (driver.Pinger): a read of the metadata key.
func (s *etcdStore) Ping(ctx context.Context) error {
	_, err := s.cli.Get(ctx, s.key("meta"))
	return s.check(ctx, err)
}

// StoreID returns the store's identity (driver.Identifier).
func (s *etcdStore) StoreID(ctx context.Context) (string, error) {
	return s.storeID(ctx, s.cfg.create)
}

// storeID reads the metadata key, writing a new identity when it is
// missing and create is set.
func (s *etcdStore) storeID(ctx context.Context, create bool) (string, error) {
	k := s.key("meta")
	for {
		resp, err := s.cli.Get(ctx, k)
		if err = s.check(ctx, err); err != nil {
			return "", err
		}
		if len(resp.Kvs) == 1 {
			id, ok := strings.CutPrefix(string(resp.Kvs[0].Value), "id=")
			if !ok || id == "" {
				return "", fmt.Errorf("metadata key %s holds %q: %w", k, resp.Kvs[0].Value, driver.ErrCorrupt)
			}
			return id, nil
		}
		if !create {
			return "", fmt.Errorf("no store at %s under %s (create=false): %w",
				strings.Join(s.cfg.endpoints, ","), s.cfg.prefix, driver.ErrNotFound)
		}
		// Created only where no other store's keys overlap this one's
		// (nested.go), and read back if created meanwhile.
		id := driver.NewStoreID()
		cmps, found := s.nestCmps()
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(k), "=", 0))
		found = append(found, clientv3.OpGet(k, clientv3.WithKeysOnly()))
		tr, err := s.cli.Txn(ctx).If(cmps...).Then(clientv3.OpPut(k, "id="+id)).Else(found...).Commit()
		if err = s.check(ctx, err); err != nil {
			return "", err
		}
		if tr.Succeeded {
			return id, nil
		}
		if len(tr.Responses[len(tr.Responses)-1].GetResponseRange().Kvs) == 0 {
			if err := s.nestRefusal(ctx, tr.Responses[:len(tr.Responses)-1]); err != nil {
				return "", err
			}
		}
	}
}

// quiet is how long without any answer makes a call that ran out of time
// one that found etcd unavailable.
const quiet = time.Second

// check notes an answer, and turns a failure after ctx ended into one that
// wraps ctx's error and, when no member answered this store for quiet,
// ErrUnavailable, saying when one last did.
func (s *etcdStore) check(ctx context.Context, err error) error {
	if err == nil {
		s.answer.Store(time.Now().UnixNano())
		s.connUp()
		return nil
	}
	select {
	case <-s.closing:
		return driver.ErrClosed
	default:
	}
	if cerr := ctx.Err(); cerr != nil {
		n := s.answer.Load()
		if n != 0 && time.Since(time.Unix(0, n)) < quiet {
			// Members answer: the call ran out of time on contention or
			// a slow server, not on an outage.
			return fmt.Errorf("%v: %w", err, cerr)
		}
		last := "never"
		if n != 0 {
			last = time.Since(time.Unix(0, n)).Round(time.Millisecond).String() + " ago"
		}
		if f := s.lastFailure(time.Unix(0, n)); f != nil {
			last += "; last failure: " + f.Error()
		}
		err = fmt.Errorf("no answer from etcd at %s (last answer: %s; %v): %w: %w",
			strings.Join(s.cfg.endpoints, ","), last, err, driver.ErrUnavailable, cerr)
		s.connDown(err)
		return err
	}
	return err
}

// retryable reports a failure that another attempt may get past: the
// server unreachable, no leader, a leader change, a server-side timeout.
// The write may still have been applied.
func retryable(err error) bool {
	switch {
	case errors.Is(err, rpctypes.ErrNoLeader), errors.Is(err, rpctypes.ErrLeaderChanged),
		errors.Is(err, rpctypes.ErrTimeout), errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail),
		errors.Is(err, rpctypes.ErrTimeoutDueToConnectionLost), errors.Is(err, rpctypes.ErrStopped),
		errors.Is(err, rpctypes.ErrTooManyRequests):
		return true
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.ResourceExhausted:
			return true
		}
	}
	return false
}

// backoff sleeps before retry n (1, 2, ...), within ctx: at most 100ms,
// as a retry follows a member's failure (no leader, an attempt cut at its
// deadline, attempts.go) and writes should resume about when a new leader
// is elected, not a long sleep later. Half of it is drawn at random, so
// stores that failed together (a fleet's) do not retry together.
func (s *etcdStore) backoff(ctx context.Context, n int, err error) error {
	driver.Retried(ctx, s.emit, n, err)
	d := min(10*time.Millisecond<<min(n, 6), 100*time.Millisecond)
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-s.closing:
		return driver.ErrClosed
	case <-ctx.Done():
		return s.check(ctx, err)
	}
}

// spawn runs f on a goroutine Close waits for; after Close it does
// nothing (what f would do, Close has done: the lease is revoked) and
// reports false.
func (s *etcdStore) spawn(f func()) bool {
	s.goMu.Lock()
	defer s.goMu.Unlock()
	if s.goDone {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

// Format prints the store as "etcd store prefix=... endpoints=..." for
// every verb: its fields hold the password.
func (s *etcdStore) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "etcd store prefix=%s endpoints=%s", s.cfg.prefix, driver.Redact(strings.Join(s.cfg.endpoints, ",")))
}

// shutdown ends every goroutine the store started, then the client if it
// is the store's own.
func (s *etcdStore) shutdown() error {
	s.cancel()
	s.goMu.Lock()
	s.goDone = true
	s.goMu.Unlock()
	s.wg.Wait()
	if s.ownCli && s.cli != nil {
		return s.cli.Close()
	}
	return nil
}
