package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/etcdtest"
	"github.com/cosid-go/store/internal/testing/freeport"
	"github.com/cosid-go/store/internal/testing/poll"
)

// TestOpenUnavailable: Open against an endpoint where nobody listens ends
// with its context, with an error that says so (ErrUnavailable next to the
// context's error) and names the endpoint.
func TestOpenUnavailable(t *testing.T) {
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	ep := fmt.Sprintf("127.0.0.1:%d", port)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	start := time.Now()
	_, err = store.OpenContext(ctx, "etcd", map[string]string{"endpoints": ep})
	if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), ep) {
		t.Fatalf("Open of a dead endpoint: %v; want ErrUnavailable and DeadlineExceeded, naming %s", err, ep)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Open took %v past its 1s context", d)
	}
}

// TestOpenBoundedByDialTimeout: Open without a context of its own gives
// up after dialTimeout when no member can be reached, saying so.
func TestOpenBoundedByDialTimeout(t *testing.T) {
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	ep := fmt.Sprintf("127.0.0.1:%d", port)
	done := make(chan error, 1)
	go func() {
		st, err := store.Open("etcd", map[string]string{"endpoints": ep, "dialTimeout": "1s"})
		if err == nil {
			st.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "dialTimeout 1s") || !strings.Contains(err.Error(), ep) {
			t.Errorf("Open of a dead endpoint: %v; want ErrUnavailable naming dialTimeout 1s and %s", err, ep)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Open of a dead endpoint still waits after 30s; dialTimeout is 1s")
	}
}

// TestMemberDown: with the only member stopped, calls end within the
// store timeout with ErrUnavailable, Ping too, and the retries are
// reported; once it is back, Next goes on above every value handed out.
// The store timeout is twice quiet: a call of one quiet (it ends at 63/64
// of its timeout, deadline.go) could end less than quiet after the last
// answer, the one before the member stopped, and be taken for contention.
func TestMemberDown(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var mu sync.Mutex
	kinds := map[store.EventKind]int{}
	st, err := store.Open("etcd", map[string]string{"endpoints": c.Endpoints()[0], "prefix": freshPrefix("down")},
		store.WithTimeout(2*quiet),
		store.WithObserver(store.Observer{Event: func(e store.Event) {
			mu.Lock()
			kinds[e.Kind]++
			mu.Unlock()
		}}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	if err := st.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	first, err := st.Ranges().Next(ctx, "k", 10)
	if err != nil || first.Start != 0 {
		t.Fatalf("Next = %d, %v", first, err)
	}
	c.Members[0].Stop()
	if _, err := st.Ranges().Next(ctx, "k", 10); !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Next with the member down: %v; want ErrUnavailable and DeadlineExceeded", err)
	}
	if err := st.Ping(ctx); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Ping with the member down: %v; want ErrUnavailable", err)
	}
	mu.Lock()
	if kinds[store.EventKind("unknown_outcome")] == 0 {
		t.Errorf("no unknown_outcome event for the Next that failed: %v", kinds)
	}
	mu.Unlock()
	c.Restart(t, c.Members[0])
	var next store.Range
	poll.Succeeds(t, 30*time.Second, "Next after the restart", func() error {
		next, err = st.Ranges().Next(ctx, "k", 10)
		return err
	})
	if next.Start < 10 {
		t.Fatalf("Next after the restart = %d; want >= 10", next)
	}
}

// TestIdentityAndCreate: create=false on a prefix with no store fails with
// ErrNotFound and writes nothing; the store created there has one identity
// whichever spelling of the endpoint reaches it, and another prefix has
// another.
func TestIdentityAndCreate(t *testing.T) {
	c := sharedServer(t)
	ep := c.Endpoints()[0]
	prefix := freshPrefix("ident")
	ctx := t.Context()
	_, err := store.Open("etcd", map[string]string{"endpoints": ep, "prefix": prefix, "create": "false"})
	if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "no store at") {
		t.Fatalf("create=false on an empty prefix: %v; want ErrNotFound", err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Fatalf("after create=false: %v keys under %s (%v); want none", resp.Count, prefix, err)
	}
	id := func(opts map[string]string) string {
		t.Helper()
		st, err := store.Open("etcd", opts)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		id, err := st.ID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	a := id(map[string]string{"endpoints": ep, "prefix": prefix})
	b := id(map[string]string{"endpoints": strings.Replace(ep, "127.0.0.1", "localhost", 1), "prefix": prefix, "create": "false"})
	other := id(map[string]string{"endpoints": ep, "prefix": freshPrefix("ident")})
	if a == "" || a != b || a == other {
		t.Errorf("identities %q, %q (same store), %q (another prefix)", a, b, other)
	}
}

// TestOptionErrors: an unknown key is refused by name, a bad value by key
// and value, and a password is never shown.
func TestOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"endpoint": "x"}, `unknown option "endpoint"`},
		{map[string]string{"dialTimeout": "-1s"}, `"dialTimeout"`},
		{map[string]string{"sessionTTL": "500ms"}, `"sessionTTL"`},
		{map[string]string{"prefix": "cosid"}, `"prefix"`},
		{map[string]string{"prefix": "/ids/."}, `"prefix"`},
		{map[string]string{"prefix": "/ids/../x"}, `"prefix"`},
		{map[string]string{"password": "hunter2"}, `"username"`},
		{map[string]string{"username": "u", "password": "hunter2", "endpoints": "http://u:hunter2@h:1"}, `"endpoints"`},
		{map[string]string{"tls.certFile": "/nonexistent"}, `"tls.certFile"`},
		// The client would speak plaintext to an http:// endpoint, TLS
		// files or not, and TLS to all endpoints or none.
		{map[string]string{"tls.caFile": "/etc/ssl/ca.pem", "endpoints": "http://127.0.0.1:2379"}, "http:// with tls.* options"},
		{map[string]string{"endpoints": "https://10.0.0.1:2379,http://10.0.0.2:2379"}, "mixes http:// and https://"},
	} {
		_, err := store.Open("etcd", tc.opts)
		if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%v): %v; want ErrInvalidArgument naming %s", tc.opts, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open: the error shows the password: %v", err)
		}
	}
}

// TestPrintNoPassword: no verb prints the store's password.
func TestPrintNoPassword(t *testing.T) {
	d, err := fromOptions(map[string]string{"username": "u", "password": "hunter2"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(verb, d); strings.Contains(out, "hunter2") || !strings.Contains(out, "etcd store") {
			t.Errorf("%s of the store: %s", verb, out)
		}
	}
}
