package etcd

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/leakcheck"
)

// TestCloseLeavesNothing: a store that used every capability, with a lock
// held, a wait in flight and a failed try's entry being removed, ends every
// goroutine and connection at Close; the wait returns ErrClosed and the
// hold's Lost closes.
func TestCloseLeavesNothing(t *testing.T) {
	ep := strings.Join(sharedServer(t).Endpoints(), ",")
	defer leakcheck.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := t.Context()
	prefix := freshPrefix("close")
	open := func() *store.Store {
		st, err := store.Open("etcd", map[string]string{"endpoints": ep, "prefix": prefix, "sessionTTL": "2s"})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	a, b := open(), open()
	defer b.Close()
	if _, err := a.Ranges().Next(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Slots().Acquire(ctx, store.Namespace{Name: "ns", Limit: 4, Tolerance: time.Second}, "o", store.AcquireOptions{}); err != nil {
		t.Fatal(err)
	}
	held, err := b.Locks().Lock(ctx, "l")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Locks().TryLock(ctx, "l"); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("TryLock of a held lock: %v", err)
	}
	waitErr := make(chan error, 1)
	go func() {
		_, err := a.Locks().Lock(ctx, "l")
		waitErr <- err
	}()
	waitQueued(t, b, "l", 2)
	mine, err := a.Locks().Lock(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waitErr:
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("a wait in flight at Close: %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a wait in flight did not end with Close")
	}
	select {
	case <-mine.Lost():
	default:
		t.Error("a hold's Lost is open after its store closed")
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}
