package idgen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cosid-go/store"
)

// Session holds one slot lease and keeps it alive: it renews about every
// ttl/3 (more often with a margin above a third of the ttl) and tells its
// holder, through Done, Err and Check, as soon as the lease can no longer
// be trusted.
//
// Validity is measured on the local monotonic clock from the moment the
// renewal that succeeded was sent (the store stamped the new expiry no
// earlier): ttl, or less if the lease's ExpiresAt was nearer by the wall
// clock at that moment, minus a margin. Separately, the holder's wall clock
// must stay below the lease's ExpiresAt. Whichever ends first ends the
// session, for good: a lost session never comes back, even if a late
// renewal would have succeeded.
//
// Close stops the renewals and releases the lease. Stop issuing first.
type Session struct {
	st     *store.Store // reports the lease's life (report.go)
	slots  *store.SlotLeaseStore
	key    termKey
	ttl    time.Duration
	margin time.Duration
	every  time.Duration // between renewals
	retry  time.Duration // after a renewal failed for a reason that may pass

	live     atomic.Pointer[term] // nil once the session ended: what Check reads
	renewals atomic.Int64         // renewals that succeeded

	mu     sync.Mutex
	last   *term // the latest term, kept after the end for Lease
	err    error // why the session ended; nil while live
	gone   bool  // the store said the term is no longer ours: nothing to release
	closed bool
	done   chan struct{} // closed when the session ends
	stop   chan struct{} // closed by Close: ends the renewal loop
	exited chan struct{} // closed when the renewal loop returned
}

// term is one view of the lease: immutable once published.
type term struct {
	lease      store.Lease
	validUntil time.Time     // on the monotonic clock
	changed    chan struct{} // closed when a renewal replaces this view, or the session ends
}

// SessionOptions tune NewSession. The zero value is the default.
type SessionOptions struct {
	Acquire store.AcquireOptions // ttl, preferred slot, reclaim of the slot

	// Margin is how long before the locally measured expiry the session
	// stops trusting its lease (zero: ttl/10). It covers the local clock
	// running slower than the store's; it must be less than the ttl. A
	// large margin makes the session renew more often: it renews every
	// ttl/3, or every half of ttl less margin if that is shorter.
	Margin time.Duration
}

// NewSession acquires a slot of ns for owner (see store.SlotLeaseStore.Acquire)
// and starts renewing it. Each session needs its own owner key within one
// store: the store would hand a second session of the same owner the very
// same term, so that is refused with ErrInUse.
func NewSession(ctx context.Context, st *store.Store, ns store.Namespace, owner string, opts SessionOptions) (*Session, error) {
	acq := opts.Acquire
	ttl := acq.TTL
	if ttl == 0 {
		ttl = store.DefaultTTL
	}
	if ttl < time.Millisecond || ttl > store.MaxTTL {
		// Checked before the margin, which is derived from it.
		return nil, invalid("lease ttl %v (Acquire.TTL) is outside [%v, %v]", ttl, time.Millisecond, store.MaxTTL)
	}
	margin := ttl / 10
	if opts.Margin != 0 {
		margin = opts.Margin
	}
	if margin < 0 || margin >= ttl {
		return nil, invalid("session margin %v is outside [0, ttl %v)", margin, ttl)
	}
	slots := st.Slots()
	lease, sent, key, err := acquire(ctx, slots, ns, owner, acq)
	if err != nil {
		return nil, err
	}
	if lease.TTL != ttl {
		// A live term of this store taken earlier with another ttl came
		// back as it is: time renewals by the term's own ttl.
		ttl = lease.TTL
		if margin >= ttl {
			margin = ttl / 10
		}
	}
	s := &Session{
		st:     st,
		slots:  slots,
		key:    key,
		ttl:    ttl,
		margin: margin,
		every:  renewEvery(ttl, margin),
		retry:  min(max(ttl/20, time.Millisecond), time.Second),
		done:   make(chan struct{}),
		stop:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	t := s.newTerm(lease, sent, nil)
	if now := time.Now(); !now.Before(t.validUntil) {
		// The lease was over before it arrived; using it would only fail
		// later and less clearly. Nothing was issued under it, so its
		// next term may start at its floor.
		if err := releaseUnused(ctx, slots, lease); err == nil || errors.Is(err, store.ErrLeaseLost) {
			forget(key)
		} else {
			retire(key) // the error to report is why the lease was over
		}
		return nil, s.overOnArrival(lease, sent, now)
	}
	s.last = t
	s.live.Store(t)
	s.report(store.LeaseAcquired, t, nil)
	go s.run(sent)
	return s, nil
}

// renewEvery is the time between renewals: ttl/3, so that two renewals may
// fail before the lease expires, but short enough that one renewal fits in
// the validity ttl less margin with as much to spare as it took.
func renewEvery(ttl, margin time.Duration) time.Duration {
	return max(min(ttl/3, (ttl-margin)/2), time.Millisecond)
}

// overOnArrival explains a lease whose validity ended before the acquire
// that produced it was answered at now: either the round trip took the
// whole validity, or the store's expiry was already near by the local
// clock (its clock is behind, or the term was older than the acquire).
func (s *Session) overOnArrival(lease store.Lease, sent, now time.Time) error {
	took := now.Sub(sent)
	ahead := time.Duration(lease.ExpiresAt-sent.UnixMilli()) * time.Millisecond
	if took >= s.ttl-s.margin {
		return fmt.Errorf("%w: the acquire of slot %d took %v, but a lease is trusted only for its ttl %v less the margin %v from when the request was sent: no validity was left when the answer arrived (its expiry, %d ms, is %s the local clock)",
			ErrLeaseLost, lease.Slot, took.Round(time.Millisecond), s.ttl, s.margin, lease.ExpiresAt, relative(lease.ExpiresAt-now.UnixMilli()))
	}
	return fmt.Errorf("%w: lease of slot %d expires at %d ms, %s the local clock when the acquire was sent, less than its ttl %v: the store's clock is behind this one, or the term is older than the acquire; less the margin %v, no validity was left when the answer arrived %v later",
		ErrLeaseLost, lease.Slot, lease.ExpiresAt, relative(ahead.Milliseconds()), s.ttl, s.margin, took.Round(time.Millisecond))
}

// relative says how ms milliseconds place a time against another.
func relative(ms int64) string {
	if ms < 0 {
		return fmt.Sprintf("%v before", time.Duration(-ms)*time.Millisecond)
	}
	return fmt.Sprintf("only %v after", time.Duration(ms)*time.Millisecond)
}

// releaseUnused ends a term under which nothing was issued: stating the
// highest timestamp used as just below the floor lets the next term start
// at the floor (at 1 for a floor of 0), rather than at the ceiling as a
// release without a used timestamp would.
func releaseUnused(ctx context.Context, slots *store.SlotLeaseStore, lease store.Lease) error {
	return slots.ReleaseUsed(ctx, lease, max(lease.Floor-1, 0))
}

// acquire takes a term no live session of this process uses. A term an
// earlier session of this process held but could not release comes back
// from the store as it is (same owner and incarnation); what that session
// issued is unknown, so it is ended at its ceiling and a new term is taken.
func acquire(ctx context.Context, slots *store.SlotLeaseStore, ns store.Namespace, owner string, acq store.AcquireOptions) (store.Lease, time.Time, termKey, error) {
	for attempt := 0; ; attempt++ {
		sent := time.Now()
		lease, err := slots.Acquire(ctx, ns, owner, acq)
		if err != nil {
			return lease, sent, termKey{}, fmt.Errorf("idgen: session: %w", err)
		}
		key := keyOf(lease)
		inUse, seen := claim(key)
		switch {
		case !seen:
			return lease, sent, key, nil
		case inUse:
			return lease, sent, key, fmt.Errorf("%w: slot %d of %q, owner %q, fence %d",
				ErrInUse, lease.Slot, lease.Namespace, lease.Owner, lease.Fence)
		case attempt > 0:
			return lease, sent, key, fmt.Errorf("idgen: session: the store returned slot %d fence %d again after it was released",
				lease.Slot, lease.Fence)
		}
		if err := slots.Release(ctx, lease); err != nil && !errors.Is(err, store.ErrLeaseLost) {
			return lease, sent, key, fmt.Errorf("idgen: session: ending an earlier term of this process: %w", err)
		}
		forget(key)
	}
}

// newTerm computes how long lease can be trusted: ttl from when the call
// that produced it was sent, but no longer than its ExpiresAt allows by the
// wall clock at that moment (a term returned as it was may be older), less
// the margin. Validity never shrinks within a session.
func (s *Session) newTerm(lease store.Lease, sent time.Time, prev *term) *term {
	life := s.ttl
	if rest := time.Duration(lease.ExpiresAt-sent.UnixMilli()) * time.Millisecond; rest < life {
		life = rest
	}
	valid := sent.Add(life - s.margin)
	if prev != nil && prev.validUntil.After(valid) {
		valid = prev.validUntil
	}
	return &term{lease: lease, validUntil: valid, changed: make(chan struct{})}
}

// Lease returns the latest lease (also after the session ended).
func (s *Session) Lease() store.Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last.lease
}

// Done is closed as soon as the lease is lost, could not be renewed before
// it would expire, or the session is closed.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err returns nil while the session is live; after it ended, an error
// wrapping ErrLeaseLost with the reason, or ErrClosed after Close.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Check returns the lease if its holder may still issue timestamps at
// wallMs, its wall clock in milliseconds: the local monotonic validity has
// not passed and wallMs is below ExpiresAt. Issue only timestamps t with
// Floor <= t < Ceiling of the lease returned. Failing either test ends the
// session.
func (s *Session) Check(wallMs int64) (store.Lease, error) {
	t, err := s.check(time.Now(), wallMs)
	if err != nil {
		return store.Lease{}, err
	}
	return t.lease, nil
}

// check is Check for a caller that already read the clock: now must carry
// a monotonic reading (a time.Now() value).
func (s *Session) check(now time.Time, wallMs int64) (*term, error) {
	t := s.live.Load()
	if t == nil {
		return nil, s.Err()
	}
	if !now.Before(t.validUntil) {
		s.lose(fmt.Errorf("not renewed within %v of sending the last renewal (ttl %v less margin %v)",
			s.ttl-s.margin, s.ttl, s.margin))
		return nil, s.Err()
	}
	if wallMs >= t.lease.ExpiresAt {
		s.lose(fmt.Errorf("the clock (%d ms) reached the lease's expiry (%d ms)", wallMs, t.lease.ExpiresAt))
		return nil, s.Err()
	}
	return t, nil
}

// lose ends the session because of cause, unless it already ended, and
// reports it.
func (s *Session) lose(cause error) {
	if s.markLost(cause) && !errors.Is(cause, store.ErrLeaseLost) { // else the store reported it
		s.report(store.LeaseLost, s.last, s.Err())
	}
}

// markLost is lose without the report; it reports whether it ended the session.
func (s *Session) markLost(cause error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return false
	}
	s.err = fmt.Errorf("%w: %w", ErrLeaseLost, cause)
	s.gone = errors.Is(cause, store.ErrLeaseLost)
	// The term is no longer live here; a later session of this process
	// that gets it back must end it first (see acquire). Retired before
	// Done closes, so whoever sees Done can start that later session.
	retire(s.key)
	s.end()
	return true
}

// end unpublishes the term and closes Done; s.mu is held.
func (s *Session) end() {
	if t := s.live.Swap(nil); t != nil {
		close(t.changed)
	}
	close(s.done)
}

// renewed publishes a renewed lease; it reports false if the session ended.
func (s *Session) renewed(lease store.Lease, sent time.Time) bool {
	s.mu.Lock()
	old, live := s.last, s.err == nil
	if live && lease.Slot == old.lease.Slot && lease.Fence == old.lease.Fence {
		t := s.newTerm(lease, sent, old)
		s.last = t
		s.live.Store(t)
		close(old.changed)
		s.mu.Unlock()
		s.renewals.Add(1)
		s.report(store.LeaseRenewed, t, nil)
		return true
	}
	s.mu.Unlock()
	if live {
		s.lose(fmt.Errorf("renewal returned slot %d fence %d for slot %d fence %d",
			lease.Slot, lease.Fence, old.lease.Slot, old.lease.Fence))
	}
	return false
}

// run renews the lease until the session ends or is closed.
func (s *Session) run(sent time.Time) {
	defer close(s.exited)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	renewAt := sent.Add(s.every)
	for {
		t := s.live.Load()
		if t == nil {
			return
		}
		wake := renewAt
		if t.validUntil.Before(wake) {
			wake = t.validUntil
		}
		if !s.sleepUntil(wake) {
			return
		}
		sent := time.Now()
		if !sent.Before(t.validUntil) {
			s.lose(fmt.Errorf("not renewed within %v of sending the last renewal", s.ttl-s.margin))
			return
		}
		r, ok := s.renew(ctx, t, sent)
		switch {
		case !ok:
			return
		case r.err == nil:
			if !s.renewed(r.lease, sent) {
				return
			}
			renewAt = sent.Add(s.every)
		case permanent(r.err):
			s.lose(r.err)
			return
		default:
			renewAt = time.Now().Add(s.retry)
		}
	}
}

// sleepUntil waits for the instant when; false if Close came first.
func (s *Session) sleepUntil(when time.Time) bool {
	timer := time.NewTimer(time.Until(when))
	defer timer.Stop()
	select {
	case <-s.stop:
		return false
	case <-timer.C:
		return true
	}
}

// renew sends one renewal. It runs in its own goroutine so that Done closes
// when the validity ends even if the store has not answered; ok is false if
// the session ended or was closed meanwhile.
func (s *Session) renew(ctx context.Context, t *term, sent time.Time) (r renewal, ok bool) {
	rctx, cancel := context.WithDeadline(ctx, t.validUntil)
	defer cancel()
	ch := make(chan renewal, 1)
	go func() {
		l, err := s.slots.Renew(rctx, t.lease)
		ch <- renewal{l, err}
	}()
	expiry := time.NewTimer(time.Until(t.validUntil))
	defer expiry.Stop()
	select {
	case r := <-ch:
		if now := time.Now(); !now.Before(t.validUntil) {
			// Too late: the lease was untrusted for a while, and a session
			// never comes back.
			s.lose(fmt.Errorf("the renewal took %v and was answered %v after the validity ended (ttl %v less margin %v from the previous renewal's send): %v",
				now.Sub(sent).Round(time.Millisecond), now.Sub(t.validUntil).Round(time.Millisecond), s.ttl, s.margin, r.err))
			return r, false
		}
		return r, true
	case <-expiry.C:
		s.lose(fmt.Errorf("the renewal sent %v ago was not answered within %v of sending the previous one (ttl %v less margin %v)",
			time.Since(sent).Round(time.Millisecond), s.ttl-s.margin, s.ttl, s.margin))
	case <-s.stop:
	}
	cancel()
	<-ch
	return renewal{}, false
}

// renewal is the outcome of one Renew call.
type renewal struct {
	lease store.Lease
	err   error
}

// permanent reports renewal failures that retrying cannot fix. A sealed
// namespace (being migrated) renews no term again: the session ends at
// once, below the ceiling the migration read, and Close still releases.
func permanent(err error) bool {
	for _, e := range []error{store.ErrLeaseLost, store.ErrClosed, store.ErrInvalidArgument,
		store.ErrUnsupported, store.ErrCorrupt, store.ErrRecreated, store.ErrSealed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Close stops the renewals and releases the lease without a used
// timestamp: the slot's next term starts at this term's ceiling. Call it
// only after the holder stopped issuing. Closing twice returns nil.
func (s *Session) Close(ctx context.Context) error { return s.release(ctx, -1) }

// CloseUsed is Close for a holder that knows used, the highest timestamp
// (in the store's milliseconds) it issued: the next term may start right
// above it.
func (s *Session) CloseUsed(ctx context.Context, used int64) error {
	if used < 0 {
		return invalid("used timestamp %d is negative", used)
	}
	return s.release(ctx, used)
}

func (s *Session) release(ctx context.Context, used int64) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.err == nil {
		s.err = ErrClosed
		s.end()
	}
	s.mu.Unlock()
	close(s.stop)
	<-s.exited // the loop no longer renews: the lease below is the last one

	s.mu.Lock()
	lease, gone := s.last.lease, s.gone
	s.mu.Unlock()
	var err error
	if !gone {
		if used >= 0 {
			err = s.slots.ReleaseUsed(ctx, lease, used)
		} else {
			err = s.slots.Release(ctx, lease)
		}
		if errors.Is(err, store.ErrLeaseLost) {
			err = nil // taken over: nothing of ours to release
		}
	}
	if err != nil {
		retire(s.key)
		return fmt.Errorf("idgen: session: %w", err)
	}
	forget(s.key)
	if !gone {
		s.report(store.LeaseReleased, s.last, nil)
	}
	return nil
}

// termKey names one term of one slot; the process-wide table below records
// the terms sessions of this process hold or held without releasing.
type termKey struct {
	namespace, owner, incarnation string
	slot                          int
	fence                         int64
}

func keyOf(l store.Lease) termKey {
	return termKey{l.Namespace, l.Owner, l.Incarnation, l.Slot, l.Fence}
}

var terms = struct {
	sync.Mutex
	m map[termKey]bool // true: a live session holds it; false: held, ended, not released
}{m: map[termKey]bool{}}

// claim marks k live unless it is known; it reports what was known.
func claim(k termKey) (inUse, seen bool) {
	terms.Lock()
	defer terms.Unlock()
	inUse, seen = terms.m[k]
	if !seen {
		terms.m[k] = true
	}
	return inUse, seen
}

func retire(k termKey) {
	terms.Lock()
	defer terms.Unlock()
	if _, ok := terms.m[k]; ok {
		terms.m[k] = false
	}
}

func forget(k termKey) {
	terms.Lock()
	defer terms.Unlock()
	delete(terms.m, k)
}
