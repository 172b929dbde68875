package postgres

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/pgtest"
)

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServerStopped: what an operator sees when the server stops and comes
// back, as with ZooKeeper: calls fail with ErrUnavailable (not a bare
// "connection refused"), Ping too; the store reports Disconnected, then
// Connected, and logs both, and the lost lock with its reason.
func TestServerStopped(t *testing.T) {
	srv := pgtest.Start(t)
	d, err := fromOptions(map[string]string{"connString": srv.ConnString(), "schema": freshSchema("stopped"),
		"poolSize": "4", "connectTimeout": "2s", "lockTimeout": "2s"})
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	var mu sync.Mutex
	var kinds []driver.EventKind
	st, err := store.OpenDriver(d, store.WithLogger(slog.New(slog.NewTextHandler(logs, nil))),
		store.WithObserver(store.Observer{Event: func(e store.Event) {
			mu.Lock()
			defer mu.Unlock()
			kinds = append(kinds, driver.EventKind(e.Kind))
		}}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	if _, err := st.Ranges().Next(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	l, err := st.Locks().Lock(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	octx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err = st.Ranges().Next(octx, "k", 1)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Next with the server stopped: %v, want ErrUnavailable", err)
	}
	t.Logf("Next: %v", err)
	if err := st.Ping(octx); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Ping with the server stopped: %v, want ErrUnavailable", err)
	}
	if _, err := st.Locks().TryLock(octx, "y"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("TryLock with the server stopped: %v, want ErrUnavailable", err)
	}
	select {
	case <-l.Lost():
	case <-time.After(10 * time.Second):
		t.Error("the hold was not lost with the server stopped")
	}
	srv.Restart(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := st.Ranges().Next(ctx, "k", 1); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("Next after the restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // the pool's next dial
	}
	mu.Lock()
	got := append([]driver.EventKind(nil), kinds...)
	mu.Unlock()
	dis := indexOf(got, driver.Disconnected)
	if dis < 0 || indexOf(got[dis:], driver.Connected) < 0 {
		t.Errorf("events %v: want disconnected, then connected", got)
	}
	out := logs.String()
	for _, want := range []string{"store: connected", "store: disconnected", "store: lock lost"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log has no %q:\n%s", want, out)
		}
	}
}

func indexOf(ks []driver.EventKind, k driver.EventKind) int {
	for i, x := range ks {
		if x == k {
			return i
		}
	}
	return -1
}
