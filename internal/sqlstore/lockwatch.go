package sqlstore

import (
	"math"
	"sync"
	"time"
)

// This file is the liveness rule of the SQL drivers' locks (docs/design.md,
// Locks on PostgreSQL; the MySQL driver follows it): a store's lock
// session confirms its row every T/3, adding one to a counter; its holds
// are good until the send time of its last confirmation + T - margin on
// the holder's monotonic clock (Liveness); another store deletes the
// session's rows only after it has seen the counter stand still for T on
// its own monotonic clock (Observations), with a delete conditional on the
// counter. No wall clock, the database's included, takes part.

// Observations is what a store has seen of other lock sessions'
// confirmation counters, on its own monotonic clock. A session may be
// taken over (its rows deleted) only once its counter has stood still for
// its T here: the counter was read after the holder sent that confirmation,
// and the holder's Lost closes at that send time + T - margin on its own
// clock, so it has closed before the delete, whatever either host's wall
// clock or the database's did meanwhile. The delete is conditional on the
// counter, so a confirmation that lands first stops it. Session ids must
// never repeat (a new session seen with an old id and count would inherit
// the old one's watch).
type Observations struct {
	mu   sync.Mutex
	seen map[int64]*observed // by session id
}

type observed struct {
	count   int64
	timeout time.Duration
	since   time.Time // when count was first seen (monotonic)
	last    time.Time // when the session was last seen
}

// See records that session id had counter count at local time at (after
// the read: a counter seen is never older than at).
func (o *Observations) See(id, count int64, timeout time.Duration, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen == nil {
		o.seen = map[int64]*observed{}
	}
	ob := o.seen[id]
	if ob == nil || ob.count != count {
		ob = &observed{count: count, since: at}
		o.seen[id] = ob
	}
	ob.timeout, ob.last = timeout, at
	// Sessions not seen for long are gone: forgetting one only restarts
	// its watch.
	for k, v := range o.seen {
		if at.Sub(v.last) > time.Minute+v.timeout {
			delete(o.seen, k)
		}
	}
}

// StillFor returns how much longer session id's counter count must stand
// still before a takeover (<= 0: it may be taken over now).
func (o *Observations) StillFor(id, count int64, now time.Time) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	ob := o.seen[id]
	if ob == nil || ob.count != count {
		return time.Duration(1<<63 - 1)
	}
	return ob.timeout - now.Sub(ob.since)
}

// Forget drops a session taken over or ended.
func (o *Observations) Forget(id int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.seen, id)
}

// Liveness is how long a lock session's holds are good: until the send
// time of its last counted confirmation + life (T - margin), on the local
// monotonic clock. Lost closes then, or earlier when the session is known
// to be gone (Lose).
type Liveness struct {
	life time.Duration
	late func() error // why, when the deadline passed

	lost  chan struct{}
	once  sync.Once
	why   error       // set before lost closes
	timer *time.Timer // fires at the deadline

	mu       sync.Mutex
	deadline time.Time
}

// NewLiveness starts the watch of a session whose first statement was
// sent at sent; late says why it was lost when the deadline passed.
func NewLiveness(sent time.Time, life time.Duration, late func() error) *Liveness {
	l := &Liveness{life: life, late: late, lost: make(chan struct{}), deadline: sent.Add(life)}
	// The timer is set before it may fire: a deadline already passed (a
	// process stalled since sent) runs expire at once, which stops l.timer.
	l.timer = time.AfterFunc(time.Duration(math.MaxInt64), l.expire)
	l.timer.Reset(time.Until(l.deadline))
	return l
}

func (l *Liveness) expire() { l.Lose(l.late()) }

// Confirmed moves the deadline to a counted confirmation's send time +
// life. A confirmation counted after the deadline changes nothing: lost
// is lost.
func (l *Liveness) Confirmed(sent time.Time) {
	if l.IsLost() {
		return
	}
	d := sent.Add(l.life)
	l.mu.Lock()
	l.deadline = d
	l.mu.Unlock()
	l.timer.Reset(time.Until(d))
}

// Check loses the session once its deadline has passed, without waiting
// for the timer: in a process paused past the deadline, the timer runs
// at some point after the resume, in no set order with the holder's own
// code, which must not find its holds still good.
func (l *Liveness) Check() {
	l.mu.Lock()
	d := l.deadline
	l.mu.Unlock()
	if !time.Now().Before(d) {
		l.expire()
	}
}

// Lose closes Lost for why (the first reason stays).
func (l *Liveness) Lose(why error) {
	l.once.Do(func() {
		l.why = why
		close(l.lost)
		l.timer.Stop()
	})
}

// Lost is closed once the session's holds are no longer good; it looks
// at the deadline first (Check).
func (l *Liveness) Lost() <-chan struct{} {
	l.Check()
	return l.lost
}

// IsLost reports whether Lost is closed, looking at the deadline too.
func (l *Liveness) IsLost() bool {
	select {
	case <-l.Lost():
		return true
	default:
		return false
	}
}

// Err says why Lost closed, or nil while it is open.
func (l *Liveness) Err() error {
	if !l.IsLost() {
		return nil
	}
	return l.why
}
