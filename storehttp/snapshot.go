package storehttp

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/idgen"
)

// Snapshot is what the status page shows, and what StatusJSON serves.
// Durations are in milliseconds (the _ms fields); lease times are
// milliseconds since the Unix epoch in the store's clock.
type Snapshot struct {
	Time       time.Time         `json:"time"`
	Ready      bool              `json:"ready"`
	Problems   []string          `json:"problems"` // why it is not ready
	Store      StoreStatus       `json:"store"`
	Segments   []SegmentStatus   `json:"segments"`
	Snowflakes []SnowflakeStatus `json:"snowflakes"`
	Locks      []LockEntry       `json:"locks"`      // held
	LostLocks  []LockEntry       `json:"lost_locks"` // lost while held, newest first
	ErrorKinds []ErrorKind       `json:"error_kinds"`
	Errors     []ErrorEntry      `json:"errors"` // newest first
	Events     []EventEntry      `json:"events"` // newest first
}

// StoreStatus describes the store.
type StoreStatus struct {
	Driver      string `json:"driver"`
	ID          string `json:"id"` // "" when the driver has no identity
	Incarnation string `json:"incarnation"`
	// Connection is the last state the driver reported ("connected",
	// "disconnected", "expired"), or "" for a driver that reports none.
	Connection string `json:"connection"`
	Server     string `json:"server,omitempty"`
	PingMs     int64  `json:"ping_ms"`
	PingError  string `json:"ping_error,omitempty"` // the Ping made for this snapshot
	UptimeMs   int64  `json:"uptime_ms"`            // since the Monitor was made
}

// SegmentStatus is a Segment generator (idgen.SegmentStats).
type SegmentStatus struct {
	Key        string `json:"key"`
	Start      int64  `json:"start"` // the current range [Start, End), Next the next value
	Next       int64  `json:"next"`
	End        int64  `json:"end"`
	PrefetchAt int64  `json:"prefetch_at"` // -1: none due
	Prefetch   int64  `json:"prefetch"`    // the prefetch distance
	Available  int64  `json:"available"`
	Refills    int64  `json:"refills"` // store calls that reserved values
	Waits      int64  `json:"waits"`
	Issued     int64  `json:"issued"`
	Error      string `json:"error,omitempty"` // the last fetch's
	State      string `json:"state"`           // "ok", "sealed", "failing" or "closed"
}

// SnowflakeStatus is a Snowflake generator and its lease.
type SnowflakeStatus struct {
	Namespace   string `json:"namespace"`
	Slot        int    `json:"slot"`
	Owner       string `json:"owner"`
	Incarnation string `json:"incarnation"`
	Fence       int64  `json:"fence"`
	Floor       int64  `json:"floor"`
	ExpiresAt   int64  `json:"expires_at"`
	Ceiling     int64  `json:"ceiling"`
	TTLMs       int64  `json:"ttl_ms"`
	LeftMs      int64  `json:"left_ms"` // how long the session still trusts the lease
	Renewals    int64  `json:"renewals"`
	Issued      int64  `json:"issued"`
	State       string `json:"state"` // "live", "lost" or "closed"
	Error       string `json:"error,omitempty"`
}

// LockEntry is a lock the process holds or lost.
type LockEntry struct {
	Name   string    `json:"name"`
	Fence  int64     `json:"fence"`
	Since  time.Time `json:"since"` // zero if taken before the Monitor saw it
	Lost   bool      `json:"lost"`
	LostAt time.Time `json:"lost_at,omitzero"`
	Cause  string    `json:"cause,omitempty"`
}

// ErrorKind counts the failed calls of one kind (store.Outcome).
type ErrorKind struct {
	Kind  string `json:"kind"`
	Count int64  `json:"count"`
}

// ErrorEntry is one failed call of the store.
type ErrorEntry struct {
	Time  time.Time `json:"time"`
	Op    string    `json:"op"`
	Key   string    `json:"key,omitempty"`
	Kind  string    `json:"kind"`
	Error string    `json:"error"`
}

// EventEntry is one event of the store, its driver or a generator.
type EventEntry struct {
	Time  time.Time `json:"time"`
	Kind  string    `json:"kind"`
	Key   string    `json:"key,omitempty"`
	Fence int64     `json:"fence,omitempty"`
	Error string    `json:"error,omitempty"`
}

// Snapshot pings the store (within Options.PingTimeout and ctx) and
// returns what the status page shows.
func (m *Monitor) Snapshot(ctx context.Context) Snapshot {
	m.mu.Lock()
	st, gens, id := m.st, append([]idgen.Generator(nil), m.gens...), m.id
	m.mu.Unlock()
	now := m.opts.Now()
	s := Snapshot{Time: now, Problems: []string{}, Segments: []SegmentStatus{}, Snowflakes: []SnowflakeStatus{}}
	if st == nil {
		s.Problems = append(s.Problems, "no store attached")
	} else {
		s.Store = m.storeStatus(ctx, st, id)
		if s.Store.PingError != "" {
			s.Problems = append(s.Problems, s.Store.PingError) // "store: Ping: ..."
		}
	}
	for _, g := range gens {
		switch g := g.(type) {
		case *idgen.Segment:
			seg := segmentStatus(g)
			if seg.State == "sealed" {
				s.Problems = append(s.Problems, fmt.Sprintf("segment %q: key sealed", seg.Key))
			}
			s.Segments = append(s.Segments, seg)
		case *idgen.Snowflake:
			sf := snowflakeStatus(g)
			if sf.State == "lost" {
				s.Problems = append(s.Problems, fmt.Sprintf("snowflake %s/%d: %s", sf.Namespace, sf.Slot, sf.Error))
			}
			s.Snowflakes = append(s.Snowflakes, sf)
		}
	}
	s.Ready = len(s.Problems) == 0

	m.mu.Lock()
	defer m.mu.Unlock()
	s.Store.Connection, s.Store.Server = m.conn, m.server
	s.Store.UptimeMs = now.Sub(m.start).Milliseconds()
	s.Locks = make([]LockEntry, 0, len(m.locks))
	for _, l := range m.locks {
		s.Locks = append(s.Locks, l)
	}
	sort.Slice(s.Locks, func(i, j int) bool {
		a, b := s.Locks[i], s.Locks[j]
		return a.Name < b.Name || a.Name == b.Name && a.Fence < b.Fence
	})
	s.LostLocks = m.lost.newest()
	s.ErrorKinds = make([]ErrorKind, 0, len(m.errKinds))
	for k, n := range m.errKinds {
		s.ErrorKinds = append(s.ErrorKinds, ErrorKind{Kind: k, Count: n})
	}
	sort.Slice(s.ErrorKinds, func(i, j int) bool { return s.ErrorKinds[i].Kind < s.ErrorKinds[j].Kind })
	s.Errors = m.errs.newest()
	s.Events = m.events.newest()
	return s
}

// storeStatus pings st and, the first time it can, reads its identity.
func (m *Monitor) storeStatus(ctx context.Context, st *store.Store, id string) StoreStatus {
	ctx, cancel := context.WithTimeout(ctx, m.opts.PingTimeout)
	defer cancel()
	s := StoreStatus{Driver: st.DriverName(), ID: id, Incarnation: st.Incarnation()}
	began := time.Now()
	err := st.Ping(ctx)
	s.PingMs = time.Since(began).Milliseconds()
	if err != nil && !errors.Is(err, store.ErrUnsupported) {
		s.PingError = redact(err)
		return s
	}
	if id == "" {
		// Read once: an identity does not change while the store is open.
		if id, err := st.ID(ctx); err == nil {
			s.ID = id
			m.mu.Lock()
			m.id = id
			m.mu.Unlock()
		}
	}
	return s
}

func segmentStatus(g *idgen.Segment) SegmentStatus {
	st := g.Stats()
	s := SegmentStatus{
		Key: g.Key(), Start: st.Start, Next: st.Next, End: st.End, PrefetchAt: st.PrefetchAt,
		Prefetch: st.Prefetch, Available: st.Available, Refills: st.Fetches, Waits: st.Waits,
		Issued: st.Issued, Error: redact(st.Err), State: "ok",
	}
	switch {
	case st.Closed:
		s.State = "closed"
	case errors.Is(st.Err, store.ErrSealed):
		s.State = "sealed"
	case st.Err != nil:
		s.State = "failing"
	}
	return s
}

func snowflakeStatus(g *idgen.Snowflake) SnowflakeStatus {
	st := g.Stats()
	l := g.Session().Lease()
	s := SnowflakeStatus{
		Namespace: l.Namespace, Slot: l.Slot, Owner: l.Owner, Incarnation: l.Incarnation, Fence: l.Fence,
		Floor: l.Floor, ExpiresAt: l.ExpiresAt, Ceiling: l.Ceiling, TTLMs: l.TTL.Milliseconds(),
		LeftMs: st.LeaseLeft.Milliseconds(), Renewals: st.Renewals, Issued: st.Issued, State: "live",
	}
	if err := g.Session().Err(); err != nil {
		s.State, s.Error = "lost", redact(err)
		if errors.Is(err, idgen.ErrClosed) {
			s.State = "closed"
		}
	}
	return s
}
