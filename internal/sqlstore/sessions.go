package sqlstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cosid-go/store/driver"
)

// LockSession is one lock session of a SQL driver (a connection of its
// own confirming its row), as Sessions keeps it.
type LockSession interface {
	comparable
	// ID is the session's row id; T its lock timeout.
	ID() int64
	T() time.Duration
	// IsLost, Lost, Lose and Err are its Liveness's.
	IsLost() bool
	Lost() <-chan struct{}
	Lose(why error)
	Err() error
	// End stops the session and deletes its rows, waking the next holders.
	End(ctx context.Context) error
}

// Sessions gives a store its current lock session, making one when
// needed, and ends them all at Close: the life cycle both SQL drivers'
// locks share (the sessions themselves differ: LISTEN on PostgreSQL,
// polling on MySQL), with the Lock call and its holds (locks.go). Only
// one Get starts a session at a time; the others wait for it, each
// within its own context.
type Sessions[S LockSession] struct {
	start   func(context.Context) (S, error)
	started func(S)
	q       LockQueue[S]
	tickets TicketFloor   // the regression guard of lock fences
	done    chan struct{} // closed by Close: lock waits end
	ctx     context.Context
	cancel  context.CancelFunc // ends a session's start and the removals
	removes sync.WaitGroup     // removals retried in the background

	mu       sync.Mutex
	cur      S
	starting chan struct{} // closed when the session being started is ready or failed
	closed   bool
	ended    []S // lost sessions whose goroutines Close must await
}

// NewSessions makes sessions with start (given a context that also ends
// at Close), tells started of each one made, and locks with q's
// statements (locks.go).
func NewSessions[S LockSession](start func(context.Context) (S, error), started func(S), q LockQueue[S]) *Sessions[S] {
	ctx, cancel := context.WithCancel(context.Background())
	return &Sessions[S]{start: start, started: started, q: q, done: make(chan struct{}), ctx: ctx, cancel: cancel}
}

// Done is closed by Close.
func (ss *Sessions[S]) Done() <-chan struct{} { return ss.done }

// Tickets is the store's regression guard of lock fences, for a driver
// whose session ids come from the tickets' counter (MySQL).
func (ss *Sessions[S]) Tickets() *TicketFloor { return &ss.tickets }

// Current is the session last made, lost or not; the zero S if none.
func (ss *Sessions[S]) Current() S {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.cur
}

// Get returns a live session, starting one if there is none.
func (ss *Sessions[S]) Get(ctx context.Context) (S, error) {
	var zero S
	for {
		ss.mu.Lock()
		if ss.closed {
			ss.mu.Unlock()
			return zero, driver.ErrClosed
		}
		if ss.cur != zero && !ss.cur.IsLost() {
			se := ss.cur
			ss.mu.Unlock()
			return se, nil
		}
		if ch := ss.starting; ch != nil {
			ss.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return zero, ctx.Err()
			}
		}
		if ss.cur != zero {
			ss.ended = append(ss.ended, ss.cur)
			ss.cur = zero
		}
		ch := make(chan struct{})
		ss.starting = ch
		ss.mu.Unlock()

		sctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(ss.ctx, cancel)
		se, err := ss.start(sctx)
		stop()
		cancel()
		ss.mu.Lock()
		ss.starting = nil
		close(ch)
		if err == nil && ss.closed {
			ss.ended = append(ss.ended, se)
			err = driver.ErrClosed
		} else if err == nil {
			ss.cur = se
			ss.started(se)
		}
		ss.mu.Unlock()
		if err != nil {
			if ss.ctx.Err() != nil {
				return zero, driver.ErrClosed
			}
			return zero, err
		}
		return se, nil
	}
}

// RemoveLater retries the removal of se's row of name with ticket
// (LockQueue.Leave) in the background, each try bounded by se's T, until
// it succeeds, the session is lost (its rows are then taken over) or
// Close (which ends the session and its rows).
func (ss *Sessions[S]) RemoveLater(se S, name string, ticket int64) {
	t := se.T()
	// Counted in under mu, and not at all once Close began: an Add that
	// raced Close's Wait returning would panic (and Close ends the rows).
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return
	}
	ss.removes.Add(1)
	ss.mu.Unlock()
	go func() {
		defer ss.removes.Done()
		pause := 50 * time.Millisecond
		for {
			timer := time.NewTimer(pause)
			select {
			case <-timer.C:
			case <-se.Lost():
				timer.Stop()
				return
			case <-ss.done:
				timer.Stop()
				return
			}
			ctx, cancel := context.WithTimeout(ss.ctx, t)
			_, err := ss.q.Leave(ctx, se, name, ticket)
			cancel()
			if err == nil {
				return
			}
			pause = min(2*pause, t/3)
		}
	}()
}

// Close ends every session, deleting their rows: the holds are lost and
// the next waiters get their turn. Its error is the current session's.
func (ss *Sessions[S]) Close() error {
	var zero S
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return nil
	}
	ss.closed = true
	close(ss.done)
	ss.cancel()
	starting := ss.starting
	ss.mu.Unlock()
	if starting != nil {
		<-starting // its start ends with ss.ctx
	}
	ss.removes.Wait()
	ss.mu.Lock()
	cur, ended := ss.cur, ss.ended
	ss.mu.Unlock()
	var errs []error
	for _, se := range append(ended, cur) {
		if se == zero {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := se.End(ctx); err != nil && se == cur {
			errs = append(errs, err)
		}
		cancel()
	}
	return errors.Join(errs...)
}

// SessionStarted reports a new lock session of the store: an answer of
// the server, and a Connected event with the session's id and T (the
// store's session, as the ZooKeeper driver's).
func (h *Health) SessionStarted(id int64, t time.Duration) {
	h.OK()
	h.Report(driver.Event{Kind: driver.Connected, Server: h.server, SessionID: id, Timeout: t})
}

// SessionExpired reports a lock session that another store took over, or
// a purge deleted: its holds are lost.
func (h *Health) SessionExpired(err error) {
	h.Report(driver.Event{Kind: driver.Expired, Err: err})
}
