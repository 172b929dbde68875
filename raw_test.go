package store_test

import (
	"errors"
	"testing"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/drivers/memory"
)

// TestRaw: Raw hands f the store's driver for the call and returns f's
// error as it is; on a closed store it gives ErrClosed and never calls f,
// so nothing reaches a closed driver through it.
func TestRaw(t *testing.T) {
	st, err := memory.OpenStore(nil)
	if err != nil {
		t.Fatal(err)
	}
	var purger bool
	mine := errors.New("f's own error")
	err = st.Raw(func(d driver.Store) error {
		_, purger = d.(driver.Purger)
		return mine
	})
	if err != mine {
		t.Errorf("Raw returned %v, want f's error as it is", err)
	}
	if !purger {
		t.Error("the memory driver, reached through Raw, is not a driver.Purger")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	called := false
	err = st.Raw(func(driver.Store) error { called = true; return nil })
	if !errors.Is(err, store.ErrClosed) || called {
		t.Errorf("Raw on a closed store: %v, f called %v; want ErrClosed and f not called", err, called)
	}
}
