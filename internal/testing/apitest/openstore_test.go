package apitest

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/drivers/memory"
	"github.com/cosid-go/store/drivers/sqlite"
)

// TestOpenStoreIsChecked: what a typed constructor returns goes through the
// portable layer's checks. The case: Next with step -100 once moved
// a key from 100 back to 0 on the driver type sqlite.New returned; now it is
// refused and the key keeps its value. The store options given are applied,
// and bad ones refused.
func TestOpenStoreIsChecked(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ids.db")
	open := map[string]func(...store.Option) (*store.Store, error){
		"memory": func(o ...store.Option) (*store.Store, error) { return memory.OpenStore(nil, o...) },
		"sqlite": func(o ...store.Option) (*store.Store, error) {
			return sqlite.OpenStore(ctx, &sqlite.Options{Path: path}, o...)
		},
	}
	for name, open := range open {
		t.Run(name, func(t *testing.T) {
			if _, err := open(store.WithTimeout(-time.Second)); !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("OpenStore with a negative timeout: %v, want ErrInvalidArgument", err)
			}
			st, err := open(store.WithTimeout(7 * time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			Checked(t, st, 7*time.Second)
		})
	}
	for _, o := range []*sqlite.Options{nil, {}, {Path: path, BusyTimeout: -time.Second}} {
		if _, err := sqlite.OpenStore(ctx, o); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("sqlite.OpenStore(%+v): %v, want ErrInvalidArgument", o, err)
		}
	}
}
