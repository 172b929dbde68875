package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cosid-go/store/driver"
)

// session is a store's lock session: one connection of its own, whose row
// it confirms every T/3. Its holds are good until lost closes, at the send
// time of the last confirmed statement + T - margin on the local monotonic
// clock; others may remove the session's rows only once the database's
// clock passes the confirmation + T. So Lost closes before anyone else can
// be granted, whatever became of the connection (SPEC 5).
type session struct {
	ls     *lockSession
	id     int64
	conn   *pgx.Conn
	t      time.Duration
	margin time.Duration

	lost     chan struct{} // closed once the session can no longer be trusted
	loseOnce sync.Once
	timer    *time.Timer   // fires lose at the deadline
	stop     chan struct{} // ends run
	stopOnce sync.Once
	done     chan struct{} // closed when run has returned

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
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
		wakes: map[int64]chan struct{}{}}
	sent := time.Now()
	err = conn.QueryRow(ctx, ls.s.Q(qSessionStart), se.t.Milliseconds()).Scan(&se.id)
	if err == nil {
		_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{ls.channel}.Sanitize())
	}
	if err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	se.timer = time.AfterFunc(time.Until(sent.Add(se.t-se.margin)), se.lose)
	go se.run(sent)
	return se, nil
}

// lose marks the session lost: every hold's Lost closes.
func (se *session) lose() { se.loseOnce.Do(func() { close(se.lost) }) }

// isLost reports whether lose was called.
func (se *session) isLost() bool {
	select {
	case <-se.lost:
		return true
	default:
		return false
	}
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
	defer se.lose()
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
			return
		}
		// Confirm; it cannot count once the deadline has passed.
		now := time.Now()
		cctx, ccancel := context.WithDeadline(context.Background(), sent.Add(se.t-se.margin))
		tag, err := se.conn.Exec(cctx, se.ls.s.Q(qSessionConfirm), se.id)
		ccancel()
		if err != nil || tag.RowsAffected() != 1 || se.isLost() {
			return
		}
		sent = now
		se.timer.Reset(time.Until(sent.Add(se.t - se.margin)))
	}
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

// halt loses the session and waits until run has returned.
func (se *session) halt() {
	se.lose()
	se.timer.Stop()
	se.stopOnce.Do(func() { close(se.stop) })
	<-se.done
}

// end stops the session and deletes its rows, waking the next holders.
func (se *session) end(ctx context.Context) error {
	se.halt()
	b := &pgx.Batch{}
	b.Queue(se.ls.s.Q(qLockSessions), se.id)
	b.Queue(se.ls.s.Q(qSessionEnd), se.id, se.ls.channel)
	if _, err := countSecond(se.ls.s.pool.SendBatch(ctx, b)); err != nil {
		return fmt.Errorf("ending lock session %d (its rows expire after %v): %w", se.id, se.t, err)
	}
	return nil
}

// lockSession gives a store its current session, making one when needed.
type lockSession struct {
	s       *Store
	channel string
	done    chan struct{} // closed by close: lock waits end

	mu     sync.Mutex
	cur    *session
	closed bool
	ended  []*session // lost sessions whose goroutines close must await
}

func newLockSession(s *Store) *lockSession {
	return &lockSession{s: s, channel: "cosid_lock:" + s.cfg.Schema, done: make(chan struct{})}
}

// get returns a live session.
func (ls *lockSession) get(ctx context.Context) (*session, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return nil, driver.ErrClosed
	}
	if ls.cur != nil && !ls.cur.isLost() {
		return ls.cur, nil
	}
	if ls.cur != nil {
		ls.ended = append(ls.ended, ls.cur)
	}
	se, err := ls.startSession(ctx)
	if err != nil {
		return nil, err
	}
	ls.cur = se
	return se, nil
}

// fail gives up a session whose rows may be in an unknown state: it stops
// confirming (so its rows expire after T) and deletes them if it can.
func (ls *lockSession) fail(se *session) {
	ctx, cancel := context.WithTimeout(context.Background(), se.t)
	defer cancel()
	_ = se.end(ctx)
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
