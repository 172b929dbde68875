package postgres

import (
	"sync"
	"time"
)

// observations is what a store has seen of other lock sessions'
// confirmation counters, on its own monotonic clock. A session may be
// taken over (its rows deleted) only once its counter has stood still for
// its T here: the counter was read after the holder sent that confirmation,
// and the holder's Lost closes at that send time + T - T/5 on its own
// clock, so it has closed before the delete, whatever either host's wall
// clock or the database's did meanwhile. The delete is conditional on the
// counter, so a confirmation that lands first stops it.
type observations struct {
	mu   sync.Mutex
	seen map[int64]*observed // by session id
}

type observed struct {
	count   int64
	timeout time.Duration
	since   time.Time // when count was first seen (monotonic)
	last    time.Time // when the session was last seen
}

// see records that session id had counter count at local time at (after
// the read: a counter seen is never older than at).
func (o *observations) see(id, count int64, timeout time.Duration, at time.Time) {
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

// stillFor returns how much longer session id's counter count must stand
// still before a takeover (<= 0: it may be taken over now).
func (o *observations) stillFor(id, count int64, now time.Time) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	ob := o.seen[id]
	if ob == nil || ob.count != count {
		return time.Duration(1<<63 - 1)
	}
	return ob.timeout - now.Sub(ob.since)
}

// forget drops a session taken over or ended.
func (o *observations) forget(id int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.seen, id)
}
