package mysql

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"fmt"
	"sync"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
	"github.com/cosid-go/store/internal/sqlstore/mysqldialect"
)

// session is a store's lock session: one connection of its own, whose row
// it confirms every T/3. Its holds are good until the send time of its
// last counted confirmation + T - T/5 on the local monotonic clock
// (sqlstore.Liveness); others may delete the session's rows only once
// they have seen its counter stand still for T on their own clocks
// (sqlstore.Observations). So Lost closes before anyone else can be
// granted, whatever became of the connection (killed, silent, a server
// restarted) or of any clock.
type session struct {
	ls   *lockSession
	id   int64
	conn *sql.Conn
	t    time.Duration
	*sqlstore.Liveness

	stop     chan struct{} // ends run
	stopOnce sync.Once
	done     chan struct{} // closed when run has returned
}

// startSession takes a connection, writes the session row and starts the
// confirmations.
func (ls *lockSession) startSession(ctx context.Context) (*session, error) {
	s := ls.s
	conn, err := ls.conns.Conn(ctx)
	if err != nil {
		return nil, err
	}
	se := &session{ls: ls, conn: conn, t: s.lockTimeout, stop: make(chan struct{}), done: make(chan struct{})}
	// Session ids come from the tickets' counter, above every id this
	// store saw: one handed out before a restore may be another session's,
	// whose watch by other stores (sqlstore.Observations) it would inherit.
	// The state row may be held by an enqueue (a silent one until the
	// server ends it): a lock wait past innodb_lock_wait_timeout is tried
	// again within ctx.
	floor := s.locks.Tickets().Seen()
	err = s.db.retry(ctx, func() error {
		var err error
		se.id, err = s.newID(ctx, conn, floor)
		return err
	})
	sent := time.Now()
	if err == nil {
		_, err = conn.ExecContext(ctx, s.lq.SessionStart, se.id, se.t.Milliseconds())
	}
	if err != nil {
		discard(conn)
		return nil, err
	}
	s.locks.Tickets().Saw(se.id)
	se.Liveness = sqlstore.NewLiveness(sent, se.t-se.t/5, func() error {
		return fmt.Errorf("lock session %d: no confirmation within %v: %w", se.id, se.t-se.t/5, driver.ErrLeaseLost)
	})
	go se.run(sent)
	return se, nil
}

// discard closes conn's connection instead of keeping it idle: a session
// that ended leaves nothing behind, and a new one starts on a new
// connection.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return sqldriver.ErrBadConn })
	_ = conn.Close()
}

// run confirms every T/3. Any failure loses the session: a new one is
// made for later locks. There is no LISTEN on MySQL: waiters poll
// (locks.go), and the session only confirms.
func (se *session) run(sent time.Time) {
	defer close(se.done)
	defer discard(se.conn)
	var why error = driver.ErrClosed
	defer func() { se.Lose(why) }()
	for {
		t := time.NewTimer(time.Until(sent.Add(se.t / 3)))
		select {
		case <-se.stop:
			t.Stop()
			return
		case <-t.C:
		}
		// Confirm; it cannot count once the deadline has passed.
		now := time.Now()
		ctx, cancel := context.WithDeadline(context.Background(), sent.Add(se.t-se.t/5))
		go func() {
			select {
			case <-se.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		ok, err := se.confirm(ctx)
		cancel()
		switch {
		case se.IsLost():
			return // past its deadline: lost already, with the reason
		case err != nil:
			why = fmt.Errorf("lock session %d: confirmation failed: %v: %w", se.id, err, driver.ErrLeaseLost)
			se.ls.s.health.Failed(err)
			return
		case !ok:
			why = fmt.Errorf("lock session %d was taken over or purged: %w", se.id, driver.ErrLeaseLost)
			se.ls.s.health.SessionExpired(why)
			return
		}
		se.ls.s.health.OK()
		sent = now
		se.Confirmed(sent)
	}
}

// confirm bumps the session's counter, then records the other sessions'
// counters; it reports whether the row was there to confirm.
func (se *session) confirm(ctx context.Context) (bool, error) {
	s := se.ls.s
	res, err := se.conn.ExecContext(ctx, s.lq.SessionConfirm, se.id)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil || n != 1 {
		return false, err
	}
	rows, err := se.conn.QueryContext(ctx, s.lq.Sessions)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	type seen struct{ id, count, timeoutMS int64 }
	var others []seen
	for rows.Next() {
		var o seen
		if err := rows.Scan(&o.id, &o.count, &o.timeoutMS); err != nil {
			return false, err
		}
		if o.id != se.id {
			others = append(others, o)
		}
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	at := time.Now()
	for _, o := range others {
		s.obs.See(o.id, o.count, time.Duration(o.timeoutMS)*time.Millisecond, at)
		s.locks.Tickets().Saw(o.id) // the counter's ids never go below a committed row's (newID)
	}
	return true, nil
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

// End stops the session and deletes its rows (the foreign key takes its
// waiter rows): the next waiters are granted at their next look.
func (se *session) End(ctx context.Context) error {
	se.halt()
	if _, err := se.ls.s.pool.ExecContext(ctx, se.ls.s.lq.SessionEnd, se.id); err != nil {
		return fmt.Errorf("ending lock session %d (its rows expire after %v): %w", se.id, se.t, err)
	}
	return nil
}

// lockSession gives a store its current session, making one when needed,
// and wakes the store's own waiters when the store frees a name.
type lockSession struct {
	*sqlstore.Sessions[*session]
	s     *driverStore
	conns *sql.DB // the sessions' connections, beside the pool

	mu    sync.Mutex // guards wakes
	wakes map[string]map[chan struct{}]bool
}

func newLockSession(s *driverStore, conns *sql.DB) *lockSession {
	ls := &lockSession{s: s, conns: conns, wakes: map[string]map[chan struct{}]bool{}}
	ls.Sessions = sqlstore.NewSessions(ls.startSession, func(se *session) { s.health.SessionStarted(se.id, se.t) }, sqlstore.LockQueue[*session]{
		Enqueue: s.enqueue, Pass: s.pass, Leave: s.leave,
		Watch: func(_ *session, name string, _ int64) (<-chan struct{}, func()) {
			return ls.watch(name)
		},
		MissingParent: func(err error) bool { return mysqldialect.Classify(err) == sqlstore.MissingParent },
		SessionErr:    s.lockErr, Unavailable: s.health.Unavailable,
	})
	return ls
}

// watch returns what wakes a waiter of name when this store frees it,
// and what stops the watch.
func (ls *lockSession) watch(name string) (chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	ls.mu.Lock()
	if ls.wakes[name] == nil {
		ls.wakes[name] = map[chan struct{}]bool{}
	}
	ls.wakes[name][ch] = true
	ls.mu.Unlock()
	return ch, func() {
		ls.mu.Lock()
		delete(ls.wakes[name], ch)
		if len(ls.wakes[name]) == 0 {
			delete(ls.wakes, name)
		}
		ls.mu.Unlock()
	}
}

// kick wakes this store's waiters of name (a row of it was deleted).
func (ls *lockSession) kick(name string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for ch := range ls.wakes[name] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
