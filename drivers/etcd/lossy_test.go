package etcd

import (
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store"
)

// openLossy opens a store on prefix whose client loses the answer of every
// third transaction (openLossyEvery).
func openLossy(t testing.TB, prefix string, lost *atomic.Int64) *store.Store {
	t.Helper()
	return openLossyEvery(t, prefix, 3, lost)
}

// TestNextLostAnswers: two stores whose Next transactions lose every third
// answer (applied, then retried) and a third that loses none, all on one
// key: no value is handed out twice.
func TestNextLostAnswers(t *testing.T) {
	prefix := freshPrefix("lossy")
	var lost atomic.Int64
	stores := []*store.Store{openLossy(t, prefix, &lost), openLossy(t, prefix, &lost), openLossy(t, prefix, &lost)}
	plain, err := OpenStore(t.Context(), &Options{Endpoints: sharedServer(t).Endpoints(), Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	stores = append(stores, plain)
	var mu sync.Mutex
	var got []store.Range
	var wg sync.WaitGroup
	for _, st := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 30 {
				r, err := st.Ranges().Next(t.Context(), "k", 7)
				if err != nil {
					t.Errorf("Next: %v", err)
					return
				}
				mu.Lock()
				got = append(got, r)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if lost.Load() == 0 {
		t.Fatal("no answer was lost")
	}
	t.Logf("%d answers lost, %d ranges", lost.Load(), len(got))
	sort.Slice(got, func(i, j int) bool { return got[i].Start < got[j].Start })
	for i := 1; i < len(got); i++ {
		if got[i].Start < got[i-1].End {
			t.Fatalf("ranges %v and %v overlap", got[i-1], got[i])
		}
	}
}

// TestLockCloseDuringWait: Close of a store whose Lock waits ends that
// Lock with ErrClosed, and its waiter key leaves the queue (the holder is
// alone again); the holder keeps its hold.
func TestLockCloseDuringWait(t *testing.T) {
	ctx := t.Context()
	holder, waiter := openPair(t, freshPrefix("closewait"))
	l, err := holder.Locks().Lock(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := waiter.Locks().Lock(ctx, "c")
		done <- err
	}()
	waitQueued(t, holder, "c", 2)
	waiter.Close()
	select {
	case err := <-done:
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("the waiting Lock after Close: %v; want ErrClosed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting Lock did not end with Close")
	}
	waitQueued(t, holder, "c", 1)
	select {
	case <-l.Lost():
		t.Error("the holder lost its hold when a waiter closed")
	default:
	}
	if err := l.Unlock(ctx); err != nil {
		t.Error(err)
	}
}

// TestLockWaitThroughCompaction: the revisions a waiter watches from are
// compacted while it waits; it is still granted once the holder unlocks.
func TestLockWaitThroughCompaction(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("compact")
	holder, waiter := openPair(t, prefix)
	l, err := holder.Locks().Lock(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := waiter.Locks().Lock(ctx, "w")
		if err == nil {
			l2.Unlock(ctx)
		}
		got <- err
	}()
	waitQueued(t, holder, "w", 2)
	cli := rawClient(t)
	for range 20 {
		if _, err := cli.Put(ctx, prefix+"/churn", "x"); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := cli.Get(ctx, prefix+"/churn")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the waiter's Lock: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter was not granted after a compaction and the unlock")
	}
}
