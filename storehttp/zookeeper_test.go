package storehttp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store"
	_ "github.com/cosid-go/store/drivers/zookeeper"
	"github.com/cosid-go/store/internal/testing/poll"
	"github.com/cosid-go/store/internal/testing/zktest"
	"github.com/cosid-go/store/storehttp"
)

// TestReadyZooKeeperFrozen: while the ZooKeeper server is frozen (SIGSTOP:
// its sockets open, nothing answering, as in a long GC pause), readiness
// fails within the Ping bound and names the store; it recovers once the
// server runs again. The driver's own signals (the connected state) are
// the ZooKeeper driver's tests'; one server version is enough here.
func TestReadyZooKeeperFrozen(t *testing.T) {
	versions := zktest.Versions()
	srv := zktest.StartServer(t, versions[len(versions)-1])
	mon := storehttp.New(storehttp.Options{PingTimeout: time.Second})
	open, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, err := store.OpenContext(open, "zookeeper", map[string]string{
		"connectString": srv.Addr(), "root": "/storehttp-frozen", "sessionTimeout": "4s", "connectionTimeout": "2s"},
		store.WithTimeout(2*time.Second), store.WithObserver(mon.Observer()))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mon.Attach(st)
	ready := func() (int, string) {
		rec := httptest.NewRecorder()
		mon.Ready().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := ready(); code != http.StatusOK {
		t.Fatalf("/readyz before the freeze: %d %q", code, body)
	}

	srv.Pause()
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume()
		}
	}()
	began := time.Now()
	code, body := ready()
	took := time.Since(began)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "store: ") {
		t.Errorf("/readyz with the server frozen: %d %q", code, body)
	}
	// The Ping bound, with room for a loaded machine to answer late.
	if took > 3*time.Second {
		t.Errorf("/readyz took %v with the server frozen, want about the 1s Ping bound", took)
	}
	t.Logf("/readyz with the server frozen, after %v: %q", took.Round(time.Millisecond), body)

	srv.Resume()
	resumed = true
	poll.Succeeds(t, 60*time.Second, "readiness after the server resumed", func() error {
		if code, body := ready(); code != http.StatusOK {
			return fmt.Errorf("/readyz: %d %q", code, body)
		}
		return nil
	})
	if err := st.Ping(t.Context()); err != nil && !errors.Is(err, store.ErrUnsupported) {
		t.Errorf("Ping after readiness came back: %v", err)
	}
}
