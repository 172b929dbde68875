package mysql

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/mysqltest"
)

// TestLockSilentInEnqueue: a store's network goes silent inside a Lock's
// enqueue transaction (after its INSERT, before its COMMIT), holding the
// name's row and the state row every enqueue updates. MariaDB ends that
// transaction after idle_transaction_timeout (lockTimeout/4, at least
// 1s), and the other stores' Locks, of that name and of another, which
// wait innodb_lock_wait_timeout at a time and try again, go through: the
// silent client's row was never committed.
func TestLockSilentInEnqueue(t *testing.T) {
	t.Parallel()
	const lockTimeout = 2 * time.Second
	opts := map[string]string{"lockTimeout": lockTimeout.String()}
	srv := mysqltest.Shared(t)
	database := srv.NewDatabase(t)
	p := mysqltest.NewProxy(t, srv.Addr())
	a := openAt(t, p.Addr(), database, opts)
	b := openAt(t, srv.Addr(), database, opts)
	ctx := t.Context()
	frozen := make(chan struct{})
	var once sync.Once
	setHook(a, func(point string) {
		if point == "enqueue" {
			once.Do(func() { p.Freeze(); close(frozen) })
		}
	})
	actx, acancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer p.Thaw()
	defer acancel()
	wg.Go(func() { _, _ = a.Lock(actx, "x", "a", true) })
	<-frozen
	start := time.Now()
	for _, name := range []string{"y", "x"} {
		bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		l, err := b.Lock(bctx, name, "b", true)
		cancel()
		if err != nil {
			t.Fatalf("Lock(%q) while another store is silent inside its enqueue (for %v): %v", name, time.Since(start), err)
		}
		t.Logf("Lock(%q) granted %v after the other store went silent", name, time.Since(start))
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
