package etcd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/etcdtest"
)

// TestOpenWithoutQuorum: Open without a deadline of its own, on the one
// member of three still running (one killed, one paused: it has lost its
// quorum, accepts connections and answers no read), returns with
// ErrUnavailable, saying dialTimeout, for a store that exists and for one
// to create, through store.Open and OpenStore. dialTimeout (1s) bounds all
// of Open: the error saying so is what shows that its bound ended Open
// (errOpenBound, the cause only dialTimeout's timer gives), not a time
// measured. Without the bound the client retries the store's identity
// read for minutes; the guard (2 minutes, whatever the machine's load) is
// against that hang.
func TestOpenWithoutQuorum(t *testing.T) {
	const guard = 2 * time.Minute
	c := etcdtest.Start(t, 3)
	prefix := freshPrefix("noquorum")
	x, _ := pickMember(t, c, false)
	st, err := OpenStore(t.Context(), &Options{Endpoints: []string{x.ClientURL}, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	var others []*etcdtest.Member
	for _, m := range c.Members {
		if m != x {
			others = append(others, m)
		}
	}
	others[0].Stop()
	others[1].Pause()
	defer others[1].Resume()

	for name, open := range map[string]func() (*store.Store, error){
		"existing store, store.Open": func() (*store.Store, error) {
			return store.Open("etcd", map[string]string{"endpoints": x.ClientURL, "prefix": prefix, "dialTimeout": "1s"})
		},
		"new store, store.Open": func() (*store.Store, error) {
			return store.Open("etcd", map[string]string{"endpoints": x.ClientURL, "prefix": freshPrefix("noquorum"), "dialTimeout": "1s"})
		},
		"existing store, OpenStore": func() (*store.Store, error) {
			return OpenStore(context.Background(), &Options{Endpoints: []string{x.ClientURL}, Prefix: prefix, DialTimeout: time.Second})
		},
	} {
		done := make(chan error, 1)
		go func() {
			st, err := open()
			if st != nil {
				st.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			t.Logf("%s: %v", name, err)
			if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "dialTimeout") {
				t.Errorf("%s without quorum: %v; want ErrUnavailable saying dialTimeout", name, err)
			}
		case <-time.After(guard):
			t.Fatalf("%s without quorum, dialTimeout 1s: no return after %v, a hang", name, guard)
		}
	}
}
