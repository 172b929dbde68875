package postgres

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/pgtest"
)

// TestLockWhileSessionStarts: a Lock keeps to its context while another
// Lock of the store is starting the lock session (here, on a network that
// does not answer).
func TestLockWhileSessionStarts(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	p := pgtest.NewProxy(t, srv.Addr())
	s := openAt(t, pgtest.ConnStringAt(p.Addr()), freshSchema("start"), map[string]string{"connectTimeout": "10s"})
	ctx := t.Context()
	before := p.Conns()
	p.Freeze()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer p.Thaw()
	first, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Go(func() { _, _ = s.Lock(first, "x", "first", true) })
	deadline := time.Now().Add(10 * time.Second)
	for p.Conns() == before { // the session's connection is being made
		if time.Now().After(deadline) {
			t.Fatal("the first Lock made no connection")
		}
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	short, scancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer scancel()
	_, err := s.Lock(short, "y", "second", true)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second Lock: %v, want a deadline", err)
	}
	// Waiting behind the first Lock would take its connectTimeout (10s);
	// half of it leaves a loaded machine room (1s did not, at load 30).
	if took > 5*time.Second {
		t.Errorf("second Lock with a 100ms context took %v while another Lock started the session", took)
	}
}
