package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/eventrec"
	"github.com/cosid-go/store/internal/testing/pgtest"
)

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
	ev := eventrec.New()
	st, err := store.OpenDriver(d, ev.Options()...)
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
	ev.CheckOrder(t, store.Disconnected, store.Connected)
	out := ev.Log()
	for _, want := range []string{"store: connected", "store: disconnected", "store: lock lost"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log has no %q:\n%s", want, out)
		}
	}
}
