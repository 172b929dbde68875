package main

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/cosid-go/store"
)

// TestEachLock: eachLock gives every lock name in order with its waiters,
// though it reads several at once, and stops at the first error of f.
func TestEachLock(t *testing.T) {
	st := freshMemory(t).open(t, store.WithListPage(7))
	var want []string
	for i := range 3 * lockReads {
		name := fmt.Sprintf("n%03d", i)
		l, err := st.Locks().TryLock(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock(t.Context())
		want = append(want, name)
	}
	var got []string
	err := eachLock(t.Context(), st, func(name string, ws []store.Waiter, err error) error {
		if err != nil || len(ws) != 1 {
			t.Errorf("lock %s: waiters %v, %v; want its holder", name, ws, err)
		}
		got = append(got, name)
		return nil
	})
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("eachLock: %v, names %q; want %q", err, got, want)
	}
	stop := errors.New("stop")
	calls := 0
	err = eachLock(t.Context(), st, func(string, []store.Waiter, error) error {
		calls++
		if calls == 5 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 5 {
		t.Fatalf("eachLock with f failing at its 5th call: %v after %d calls", err, calls)
	}
}
