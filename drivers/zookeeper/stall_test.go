package zookeeper

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/eventrec"
	"github.com/cosid-go/store/internal/testing/poll"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestFrozenServerReported: with the server frozen (SIGSTOP), a call that
// hears nothing for stallQuiet makes the store report Disconnected (event
// and WARN log) long before go-zookeeper's read timeout (2/3 of a 30s
// session) would, and Connected as soon as the server answers again
// (SIGCONT); the call then succeeds.
func TestFrozenServerReported(t *testing.T) {
	zktest.EachVersion(t, func(t *testing.T, srv *zktest.Server) {
		ev := eventrec.New()
		st, err := store.OpenContext(t.Context(), "zookeeper",
			testOptions(srv.Addr(), map[string]string{"sessionTimeout": "30s"}), ev.Options()...)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		ev.Await(t, store.Connected, 20*time.Second)
		srv.Pause()
		paused := true
		defer func() {
			if paused {
				srv.Resume()
			}
		}()
		start := time.Now()
		pinged := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			pinged <- st.Ping(ctx)
		}()
		// stallQuiet (1s) is the bound; the rest is room for a loaded
		// machine, still well before the read timeout (20s).
		down := ev.Await(t, store.Disconnected, 10*time.Second)
		t.Logf("disconnected reported %v after the call began: %v", time.Since(start).Round(time.Millisecond), down.Err)
		if down.Err == nil || !strings.Contains(down.Err.Error(), "no ZooKeeper server answered") {
			t.Errorf("disconnected event with %v, want the store's own reason (no server answered)", down.Err)
		}
		if want := `level=WARN msg="store: disconnected"`; !strings.Contains(ev.Log(), want) {
			t.Errorf("log lacks %q:\n%s", want, ev.Log())
		}
		srv.Resume()
		paused = false
		poll.Until(t, 20*time.Second, "Connected reported again once the server answers", func() bool {
			return len(ev.Of(store.Connected)) == 2
		})
		if err := <-pinged; err != nil {
			t.Errorf("Ping across the freeze: %v", err)
		}
		if got := ev.Kinds(); !eventrec.InOrder(got, store.Connected, store.Disconnected, store.Connected) {
			t.Errorf("events %v, want connected, disconnected, connected", got)
		}
	})
}

// TestCloseIsNoOutage: a normal Close reports no Disconnected, and logs no
// warning.
func TestCloseIsNoOutage(t *testing.T) {
	addr := zktest.StartServer(t, zktest.Versions()[0]).Addr()
	ev := eventrec.New()
	st, err := store.OpenContext(t.Context(), "zookeeper", testOptions(addr, nil), ev.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if d := ev.Of(store.Disconnected); len(d) != 0 {
		t.Errorf("Close reported %d disconnected events: %+v", len(d), d)
	}
	if strings.Contains(ev.Log(), "WARN") {
		t.Errorf("Close logged a warning:\n%s", ev.Log())
	}
}
