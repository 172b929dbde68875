package postgres

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cosid-go/store/internal/sqlstore"
	"github.com/cosid-go/store/internal/sqlstore/pgdialect"
)

// The server-side bounds, so that a client gone silent cannot stall the
// others (T = lockTimeout):
//
//   - idle_in_transaction_session_timeout, T/4 (at least 500 ms): the
//     server ends a transaction of the driver idle that long, between two
//     of its statements, and its row locks go with it;
//   - lock_timeout, T/2 (at least 1 s): no statement of the driver waits
//     longer for a row lock; the aborted transaction is tried again within
//     the operation's own timeout (retryAborted);
//   - TCP keepalives on both ends (first probe after T/4, at least 1 s,
//     then every second, 3 probes) and the server's tcp_user_timeout of
//     T/2 (at least 1 s): a dead peer is noticed in seconds, not the
//     kernel's two hours or fifteen minutes.
//
// So a silent client's row locks are gone within T/4 of its last
// statement (500 ms at least), and every other statement proceeds within
// T/2 (1 s at least). Not so when the silence cuts a statement's messages
// before their Sync: the backend then waits for input in an open implicit
// transaction ("active", not idle in transaction), which no server timeout
// ends; only the keepalives do, once the peer is dead.
type bounds struct {
	idle, lock, keepIdle time.Duration
}

func boundsOf(t time.Duration) bounds {
	return bounds{
		idle:     max(t/4, 500*time.Millisecond),
		lock:     max(t/2, time.Second),
		keepIdle: max((t / 4).Round(time.Second), time.Second),
	}
}

// apply sets the bounds as settings of every session made from cfg.
func (b bounds) apply(cfg *pgconn.Config) {
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	cfg.RuntimeParams["idle_in_transaction_session_timeout"] = ms(b.idle)
	cfg.RuntimeParams["lock_timeout"] = ms(b.lock)
	cfg.RuntimeParams["tcp_keepalives_idle"] = strconv.Itoa(int(b.keepIdle.Seconds()))
	cfg.RuntimeParams["tcp_keepalives_interval"] = "1"
	cfg.RuntimeParams["tcp_keepalives_count"] = "3"
	cfg.RuntimeParams["tcp_user_timeout"] = ms(b.lock)
}

// dialer makes the client's sockets with the same keepalives, for a pool
// the store opens (a caller's pool keeps its own dialer).
func (b bounds) dialer() pgconn.DialFunc {
	d := &net.Dialer{KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: b.keepIdle, Interval: time.Second, Count: 3}}
	return d.DialContext
}

// begin starts every transaction of the driver with the bounds set for it
// alone, so they hold on a pool the caller made too (New), and in read
// committed whatever the database's default: a transaction that waits for
// a table lock (a seal's, a purge's) must read what its holder committed,
// and in repeatable read its snapshot is its first statement's, taken
// before the wait (an Acquire then started a term after a seal returned).
func (b bounds) begin() pgx.TxOptions {
	return pgx.TxOptions{BeginQuery: fmt.Sprintf("BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL lock_timeout = %d; SET LOCAL idle_in_transaction_session_timeout = %d",
		b.lock.Milliseconds(), b.idle.Milliseconds())}
}

func beginBounded(t time.Duration) pgx.TxOptions { return boundsOf(t).begin() }

// aborted reports an error after which the server rolled the transaction
// back and it may simply be tried again: a serialization failure, a
// deadlock, a lock wait past lock_timeout.
func aborted(err error) bool { return pgdialect.Classify(err) == sqlstore.Aborted }

// retryAborted runs fn, a whole transaction, again while it fails with an
// aborted transaction and ctx lasts (sqlstore.RetryAborted).
func retryAborted(ctx context.Context, fn func() error) error {
	return sqlstore.RetryAborted(ctx, aborted, fn)
}
