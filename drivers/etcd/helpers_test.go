package etcd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/poll"
)

// openDriver opens a store on prefix of the shared member, letting set
// change the driver (its test hooks) before it connects.
func openDriver(t testing.TB, prefix string, set func(d *driverStore)) *store.Store {
	t.Helper()
	return openDriverOn(t, sharedServer(t).Endpoints(), prefix, set)
}

// openDriverOn is openDriver on the given endpoints.
func openDriverOn(t testing.TB, endpoints []string, prefix string, set func(d *driverStore)) *store.Store {
	t.Helper()
	cfg, err := parseOptions(map[string]string{"endpoints": strings.Join(endpoints, ","), "prefix": prefix})
	if err != nil {
		t.Fatal(err)
	}
	d := newStore(cfg, nil)
	set(d)
	if err := d.Connect(t.Context()); err != nil {
		d.Close()
		t.Fatal(err)
	}
	st, err := store.OpenDriver(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// openPair opens two stores on prefix of the shared member, a holder and a
// waiter of the same locks, each closed when the test ends.
func openPair(t testing.TB, prefix string) (holder, waiter *store.Store) {
	t.Helper()
	open := func() *store.Store {
		st, err := OpenStore(t.Context(), &Options{Endpoints: sharedServer(t).Endpoints(), Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	return open(), open()
}

// waitQueued polls Waiters until the lock has n entries (bounded).
func waitQueued(t *testing.T, st *store.Store, name string, n int) {
	t.Helper()
	poll.Until(t, 30*time.Second, fmt.Sprintf("lock %s has %d waiters", name, n), func() bool {
		ws, err := st.Locks().Waiters(t.Context(), name)
		return err == nil && len(ws) == n
	})
}
