package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
	"github.com/cosid-go/store/internal/sqlstore/pgdialect"
)

// session is a store's lock session: one connection of its own, whose row
// it confirms every T/3. Its holds are good until Lost closes, at the send
// time of the last confirmed statement + T - margin on the local monotonic
// clock (sqlstore.Liveness); others may remove the session's rows only once
// they have seen its counter stand still for T on their own clocks
// (sqlstore.Observations). So Lost closes before anyone else can be
// granted, whatever became of the connection or of any clock.
type session struct {
	ls     *lockSession
	id     int64
	conn   *pgx.Conn
	t      time.Duration
	margin time.Duration

	*sqlstore.Liveness               // the holds' deadline and Lost
	stop               chan struct{} // ends run
	stopOnce           sync.Once
	done               chan struct{} // closed when run has returned

	mu    sync.Mutex
	wakes map[int64]chan struct{} // ticket -> wake-up of a waiter of this store
}

// startSession opens the connection, writes the session row and starts
// the confirmations.
func (ls *lockSession) startSession(ctx context.Context) (*session, error) {
	cfg := ls.s.cfg.ConnConfig.Copy()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	se := &session{ls: ls, conn: conn, t: ls.s.cfg.LockTimeout, margin: ls.s.cfg.LockTimeout / 5,
		stop: make(chan struct{}), done: make(chan struct{}),
		wakes: map[int64]chan struct{}{}}
	sent := time.Now()
	// Session ids come from the tickets' sequence, above every value this
	// store saw: one handed out before a restore may be another session's,
	// whose watch by other stores (sqlstore.Observations) it would inherit.
	floor := ls.Tickets().Seen()
	err = conn.QueryRow(ctx, ls.s.lq.SessionStart, se.t.Milliseconds(), floor).Scan(&se.id)
	if errors.Is(err, pgx.ErrNoRows) {
		err = wentBack(floor)
	}
	if err == nil {
		_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{sessionChannel(ls.channel, se.id)}.Sanitize())
	}
	if err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	ls.Tickets().Saw(se.id)
	se.Liveness = sqlstore.NewLiveness(sent, se.t-se.margin, func() error {
		return fmt.Errorf("lock session %d: no confirmation within %v: %w", se.id, se.t-se.margin, driver.ErrLeaseLost)
	})
	go se.run(sent)
	return se, nil
}

// run waits for notifications between confirmations, and confirms every
// T/3. Any failure loses the session: a new one is made for later locks.
func (se *session) run(sent time.Time) {
	defer close(se.done)
	defer func() {
		// Close waits for the server's goodbye; a silent network never
		// sends it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = se.conn.Close(ctx)
	}()
	var why error = driver.ErrClosed
	defer func() { se.Lose(why) }()
	for {
		next := sent.Add(se.t / 3)
		ctx, cancel := context.WithDeadline(context.Background(), next)
		go func() {
			select {
			case <-se.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		n, err := se.conn.WaitForNotification(ctx)
		cancel()
		if n != nil {
			se.wake(n.Payload)
		}
		select {
		case <-se.stop:
			return
		default:
		}
		if err == nil {
			continue
		}
		if !pgconn.Timeout(err) && !errors.Is(err, context.DeadlineExceeded) {
			why = fmt.Errorf("lock session %d: connection failed: %v: %w", se.id, err, driver.ErrLeaseLost)
			se.ls.s.disconnected(err)
			return
		}
		// Confirm; it cannot count once the deadline has passed.
		now := time.Now()
		cctx, ccancel := context.WithDeadline(context.Background(), sent.Add(se.t-se.margin))
		ok, err := se.confirm(cctx)
		ccancel()
		switch {
		case se.IsLost():
			return // past its deadline: lost already, with the reason
		case err != nil:
			why = fmt.Errorf("lock session %d: confirmation failed: %v: %w", se.id, err, driver.ErrLeaseLost)
			se.ls.s.disconnected(err)
			return
		case !ok:
			why = fmt.Errorf("lock session %d was taken over or purged: %w", se.id, driver.ErrLeaseLost)
			se.ls.s.health.SessionExpired(why)
			return
		}
		sent = now
		se.Confirmed(sent)
	}
}

// confirm bumps the session's counter, and records the other sessions'
// counters; it reports whether the row was there to confirm.
func (se *session) confirm(ctx context.Context) (bool, error) {
	rows, err := se.conn.Query(ctx, se.ls.s.lq.SessionConfirm, se.id)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	type seen struct{ id, count, timeoutMS int64 }
	var others []seen
	confirmed := false
	for rows.Next() {
		var o seen
		var n int64
		if err := rows.Scan(&o.id, &o.count, &o.timeoutMS, &n); err != nil {
			return false, err
		}
		confirmed = n == 1
		if o.id != se.id {
			others = append(others, o)
		}
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	at := time.Now()
	for _, o := range others {
		se.ls.s.obs.See(o.id, o.count, time.Duration(o.timeoutMS)*time.Millisecond, at)
		se.ls.Tickets().Saw(o.id) // the sequence's values never go below a committed row's (nextAbove)
	}
	return confirmed, nil
}

// wake passes a notification (the ticket of a new head) to its waiter.
func (se *session) wake(payload string) {
	ticket, err := strconv.ParseInt(payload, 10, 64)
	if err != nil {
		return
	}
	se.mu.Lock()
	ch := se.wakes[ticket]
	se.mu.Unlock()
	if ch == nil {
		se.ls.heard.Add(1) // not for this store's waiters
	}
	if ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (se *session) watch(ticket int64) chan struct{} {
	ch := make(chan struct{}, 1)
	se.mu.Lock()
	se.wakes[ticket] = ch
	se.mu.Unlock()
	return ch
}

func (se *session) unwatch(ticket int64) {
	se.mu.Lock()
	delete(se.wakes, ticket)
	se.mu.Unlock()
}

// ID is the session's row id (sqlstore.LockSession).
func (se *session) ID() int64 { return se.id }

// T is the session's lock timeout (sqlstore.LockSession).
func (se *session) T() time.Duration { return se.t }

// halt loses the session and waits until run has returned.
func (se *session) halt() {
	se.Lose(driver.ErrClosed)
	se.stopOnce.Do(func() { close(se.stop) })
	<-se.done
}

// End stops the session and deletes its rows, waking the next holders.
func (se *session) End(ctx context.Context) error {
	se.halt()
	b := &pgx.Batch{}
	b.Queue(se.ls.s.lq.LockSessions, se.id)
	b.Queue(se.ls.s.lq.SessionEnd, se.id, se.ls.channel)
	if _, err := countSecond(se.ls.s.pool.SendBatch(ctx, b)); err != nil {
		return fmt.Errorf("ending lock session %d (its rows expire after %v): %w", se.id, se.t, err)
	}
	return nil
}

// lockSession gives a store its current session, making one when needed.
type lockSession struct {
	*sqlstore.Sessions[*session]
	s       *driverStore
	channel string

	// heard counts the notifications the sessions received that woke
	// none of the store's waiters (tests measure what an Unlock costs the
	// other stores).
	heard atomic.Int64
}

// channel is the base of the NOTIFY channels of a schema: a hash, so that
// any schema name gives a channel name within the server's 63 bytes.
func channelOf(schema string) string {
	h := sha256.Sum256([]byte(schema))
	return "cosid_lock_" + hex.EncodeToString(h[:8])
}

// sessionChannel is the channel a lock session LISTENs on: the base and
// its id (47 bytes at most), as the statements that wake a waiter name
// it ($channel || '_' || session). A channel per session, not per
// schema: a NOTIFY reaches only the session of the waiter it wakes, not
// every store's (an Unlock among many holders was a message to each).
func sessionChannel(base string, id int64) string {
	return base + "_" + strconv.FormatInt(id, 10)
}

func newLockSession(s *driverStore) *lockSession {
	ls := &lockSession{s: s, channel: channelOf(s.cfg.Schema)}
	ls.Sessions = sqlstore.NewSessions(ls.startSession, func(se *session) { s.health.SessionStarted(se.id, se.t) }, sqlstore.LockQueue[*session]{
		Enqueue: s.enqueue, Pass: s.pass, Leave: s.leave,
		Watch: func(se *session, _ string, ticket int64) (<-chan struct{}, func()) {
			return se.watch(ticket), func() { se.unwatch(ticket) }
		},
		MissingParent: func(err error) bool { return pgdialect.Classify(err) == sqlstore.MissingParent },
		SessionErr:    s.unavailable, Unavailable: s.unavailable,
	})
	return ls
}
