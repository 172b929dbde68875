package zookeeper

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestTryLockPastOwnStray: a TryLock that found the lock held leaves its
// node's removal to the background (TryLock never waits for a delete).
// Once the holder unlocks, the store's next TryLock takes the lock even
// while that removal has not run: the stray node is nobody's hold or
// wait. The kit's Locks/TryLock failed at load with ErrLocked and "1
// holder and waiter node(s) ahead" when the removal was late.
func TestTryLockPastOwnStray(t *testing.T) {
	onEachVersion(t, func(*zktest.Server) []serverCheck {
		return []serverCheck{{"RemovalLate", testTryLockPastOwnStray}}
	})
}

func testTryLockPastOwnStray(t *testing.T, addr string) {
	opts := testOptions(addr, map[string]string{"root": randomRoot()})
	holder := openTest(t, opts, nil)
	tryer := openTest(t, opts, nil)
	ctx := t.Context()
	const name = "try"
	h, err := holder.Lock(ctx, name, "holder", false)
	if err != nil {
		t.Fatal(err)
	}
	// Removals of the tryer's abandoned nodes wait until the end.
	release := make(chan struct{})
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	defer letGo()
	started := make(chan struct{}, 1)
	tryer.sess.beforeRemove = func() {
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
	}
	if _, err := tryer.Lock(ctx, name, "tryer", false); !errors.Is(err, driver.ErrLocked) {
		t.Fatalf("TryLock of a held lock: %v, want ErrLocked", err)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the failed TryLock's node removal did not start")
	}
	conn := rawConn(t, addr)
	parent := tryer.lockParent(name)
	if got := lockNodes(t, conn, parent); len(got) != 2 {
		t.Fatalf("with the removal held, the lock has nodes %q; want the holder's and the stray", got)
	}
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := tryer.Lock(ctx, name, "tryer", false)
	if err != nil {
		t.Fatalf("TryLock after the holder unlocked, its own stray node still there: %v", err)
	}
	// Another store still sees the stray ahead: it must not get the lock.
	if _, err := holder.Lock(ctx, name, "holder", false); !errors.Is(err, driver.ErrLocked) {
		t.Fatalf("another store's TryLock while the tryer holds: %v, want ErrLocked", err)
	}
	letGo()
	lockEventually(t, 10*time.Second, "the stray removed", func() bool {
		return len(lockNodes(t, conn, parent)) == 1
	})
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
