package srvproc

import (
	"sync"
	"testing"
)

// Runner is what a TestMain runs: a *testing.M, or another helper's Wrap.
type Runner interface{ Run() int }

// Shared is a test binary's one shared server of a helper, started on
// first use: tests keep apart on it by schema, database or key prefix
// instead of starting servers of their own. The zero value is ready.
type Shared[S any] struct {
	mu      sync.Mutex
	s       S
	started bool
	err     error
}

// Get returns the shared server, starting it with start on the first call.
// A test calling it fails, with the reason, when none starts (and every
// later one, without trying again).
func (sh *Shared[S]) Get(t testing.TB, start func() (S, error)) S {
	t.Helper()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !sh.started && sh.err == nil {
		sh.s, sh.err = start()
		sh.started = sh.err == nil
	}
	if sh.err != nil {
		t.Fatal(sh.err)
	}
	return sh.s
}

// Stop stops the shared server with stop, if one started; a later Get
// starts another.
func (sh *Shared[S]) Stop(stop func(S)) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.started {
		stop(sh.s)
		var zero S
		sh.s, sh.started = zero, false
	}
}

// Wrap returns m with, after its Run, after run (the helper's shared
// server stopped), then every server of helper still running killed and
// listed (Reap, Report): the binary fails, since no server may outlive
// the tests. kind names the servers in the report ("PostgreSQL").
func Wrap(m Runner, helper, kind string, after func()) Runner {
	return wrapped{m, helper, kind, after}
}

type wrapped struct {
	m            Runner
	helper, kind string
	after        func()
}

func (w wrapped) Run() int {
	code := w.m.Run()
	w.after()
	return Report(w.helper, w.kind, code, Reap(w.helper))
}
