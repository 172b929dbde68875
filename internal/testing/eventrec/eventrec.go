// Package eventrec records what a store reports, its events and its log,
// for tests: a test waits for an event of a kind, reads the events of a
// kind, or checks that kinds came in an order. Checks are patterns, not
// exact sequences: on a loaded machine a disconnect or a retry may come
// twice, and a test must not fail for it.
//
// It is a test helper: import it from _test.go files only.
package eventrec

import (
	"bytes"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// Recorder records events and log lines; safe for the store's goroutines.
type Recorder struct {
	mu   sync.Mutex
	all  []store.Event
	logs bytes.Buffer
	more chan struct{} // a token per event, for Await
}

// New returns an empty recorder.
func New() *Recorder { return &Recorder{more: make(chan struct{}, 1)} }

// Options are the store options that report to r: an observer, and a text
// logger at debug level.
func (r *Recorder) Options() []store.Option {
	return []store.Option{
		store.WithObserver(store.Observer{Event: r.Add}),
		store.WithLogger(slog.New(slog.NewTextHandler(r, &slog.HandlerOptions{Level: slog.LevelDebug}))),
	}
}

// Add records e.
func (r *Recorder) Add(e store.Event) {
	r.mu.Lock()
	r.all = append(r.all, e)
	r.mu.Unlock()
	select {
	case r.more <- struct{}{}:
	default: // a token is waiting already; Await looks at every event
	}
}

// Notify records a driver's event, as the store would pass it on: for a
// test that gives Notify to a driver store directly.
func (r *Recorder) Notify(e driver.Event) {
	r.Add(store.Event{Kind: store.EventKind(e.Kind), Key: e.Key, Server: e.Server, SessionID: e.SessionID,
		Timeout: e.Timeout, Attempt: e.Attempt, Value: e.Value, Count: e.Count, Err: e.Err})
}

// Write takes the logger's lines.
func (r *Recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.Write(p)
}

// Log returns the log so far.
func (r *Recorder) Log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.String()
}

// Of returns the events of kind so far, in order.
func (r *Recorder) Of(kind store.EventKind) []store.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []store.Event
	for _, e := range r.all {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// Kinds returns the kinds of the events so far, in order.
func (r *Recorder) Kinds() []store.EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]store.EventKind, len(r.all))
	for i, e := range r.all {
		out[i] = e.Kind
	}
	return out
}

// Await waits up to within for an event of kind and returns the first.
func (r *Recorder) Await(t testing.TB, kind store.EventKind, within time.Duration) store.Event {
	t.Helper()
	deadline := time.After(within)
	for {
		if got := r.Of(kind); len(got) > 0 {
			return got[0]
		}
		select {
		case <-r.more:
		case <-deadline:
			t.Fatalf("no %s event within %v; events so far: %v", kind, within, r.Kinds())
		}
	}
}

// InOrder reports whether want occurs in got in this order, other kinds
// and repeats allowed before, between and after: the pattern
// ".* want[0] .* want[1] .* ...".
func InOrder[K comparable](got []K, want ...K) bool {
	i := 0
	for _, k := range got {
		if i < len(want) && k == want[i] {
			i++
		}
	}
	return i == len(want)
}

// CheckOrder fails t unless the recorded kinds hold want in order
// (InOrder).
func (r *Recorder) CheckOrder(t testing.TB, want ...store.EventKind) {
	t.Helper()
	if got := r.Kinds(); !InOrder(got, want...) {
		t.Errorf("events %v: want %s in this order (others and repeats allowed)", got, fmt.Sprint(want))
	}
}
