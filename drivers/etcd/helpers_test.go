package etcd

import (
	"strings"
	"testing"

	"github.com/cosid-go/store"
)

// openDriver opens a store on prefix of the shared member, letting set
// change the driver (its test hooks) before it connects.
func openDriver(t testing.TB, prefix string, set func(d *etcdStore)) *store.Store {
	t.Helper()
	cfg, err := parseOptions(map[string]string{"endpoints": strings.Join(sharedServer(t).Endpoints(), ","), "prefix": prefix})
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
