package mysql

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
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
	// The state row may be held by an enqueue (a silent one until the
	// server ends it): a lock wait past innodb_lock_wait_timeout is tried
	// again within ctx.
	err = s.db.retry(ctx, func() error {
		var err error
		se.id, err = newID(ctx, conn, s.lq.NewID)
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
			se.ls.s.expired(why)
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
	}
	return true, nil
}

// halt loses the session and waits until run has returned.
func (se *session) halt() {
	se.Lose(driver.ErrClosed)
	se.stopOnce.Do(func() { close(se.stop) })
	<-se.done
}

// end stops the session and deletes its rows (the foreign key takes its
// waiter rows): the next waiters are granted at their next look.
func (se *session) end(ctx context.Context) error {
	se.halt()
	if _, err := se.ls.s.pool.ExecContext(ctx, se.ls.s.lq.SessionEnd, se.id); err != nil {
		return fmt.Errorf("ending lock session %d (its rows expire after %v): %w", se.id, se.t, err)
	}
	return nil
}

// lockSession gives a store its current session, making one when needed,
// and wakes the store's own waiters when the store frees a name.
type lockSession struct {
	s       *driverStore
	conns   *sql.DB       // the sessions' connections, beside the pool
	done    chan struct{} // closed by close: lock waits end
	ctx     context.Context
	cancel  context.CancelFunc // ends a session's start and the removals
	removes sync.WaitGroup     // removals retried in the background

	mu       sync.Mutex
	cur      *session
	starting chan struct{} // closed when the session being started is ready or failed
	closed   bool
	ended    []*session // lost sessions whose goroutines close must await
	wakes    map[string]map[chan struct{}]bool
}

func newLockSession(s *driverStore, conns *sql.DB) *lockSession {
	ctx, cancel := context.WithCancel(context.Background())
	return &lockSession{s: s, conns: conns, done: make(chan struct{}), ctx: ctx, cancel: cancel,
		wakes: map[string]map[chan struct{}]bool{}}
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

// get returns a live session. Only one Lock starts a session at a time;
// the others wait for it, each within its own context.
func (ls *lockSession) get(ctx context.Context) (*session, error) {
	for {
		ls.mu.Lock()
		if ls.closed {
			ls.mu.Unlock()
			return nil, driver.ErrClosed
		}
		if ls.cur != nil && !ls.cur.IsLost() {
			se := ls.cur
			ls.mu.Unlock()
			return se, nil
		}
		if ch := ls.starting; ch != nil {
			ls.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if ls.cur != nil {
			ls.ended = append(ls.ended, ls.cur)
			ls.cur = nil
		}
		ch := make(chan struct{})
		ls.starting = ch
		ls.mu.Unlock()

		sctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(ls.ctx, cancel)
		se, err := ls.startSession(sctx)
		stop()
		cancel()
		ls.mu.Lock()
		ls.starting = nil
		close(ch)
		if err == nil && ls.closed {
			ls.ended = append(ls.ended, se)
			err = driver.ErrClosed
		} else if err == nil {
			ls.cur = se
			ls.s.connected(se)
		}
		ls.mu.Unlock()
		if err != nil {
			if ls.ctx.Err() != nil {
				return nil, driver.ErrClosed
			}
			return nil, err
		}
		return se, nil
	}
}

// fail gives up a session whose rows may be in an unknown state: it stops
// confirming (so its rows can be taken over after T) and deletes them if
// it can.
func (ls *lockSession) fail(se *session) {
	ctx, cancel := context.WithTimeout(context.Background(), se.t)
	defer cancel()
	_ = se.end(ctx)
}

// removeLater retries the removal of a row of se in the background until
// it succeeds, the session is lost (its rows are then taken over) or the
// store closes (which ends the session and its rows).
func (ls *lockSession) removeLater(se *session, name string, ticket int64) {
	ls.removes.Add(1)
	go func() {
		defer ls.removes.Done()
		pause := 50 * time.Millisecond
		for {
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-se.Lost():
				t.Stop()
				return
			case <-ls.done:
				t.Stop()
				return
			}
			ctx, cancel := context.WithTimeout(ls.ctx, se.t)
			_, err := ls.s.leave(ctx, se, name, ticket)
			cancel()
			if err == nil {
				return
			}
			pause = min(2*pause, se.t/3)
		}
	}()
}

// close ends the current session, deleting its rows: the holds are lost
// and the next waiters get their turn.
func (ls *lockSession) close() error {
	ls.mu.Lock()
	if ls.closed {
		ls.mu.Unlock()
		return nil
	}
	ls.closed = true
	close(ls.done)
	ls.cancel()
	starting := ls.starting
	ls.mu.Unlock()
	if starting != nil {
		<-starting // its start ends with ls.ctx
	}
	ls.removes.Wait()
	ls.mu.Lock()
	cur, ended := ls.cur, ls.ended
	ls.mu.Unlock()
	var errs []error
	for _, se := range append(ended, cur) {
		if se == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := se.end(ctx); err != nil && se == cur {
			errs = append(errs, err)
		}
		cancel()
	}
	return errors.Join(errs...)
}
