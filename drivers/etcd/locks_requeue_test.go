package etcd

import (
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/netproxy"
)

// TestWaiterQueuesAgain: a waiter cut off long enough for its session's
// lease to expire (its key leaves the queue) does not fail its Lock: once
// it can reach the server again it queues anew, and gets the lock when
// the holder unlocks.
func TestWaiterQueuesAgain(t *testing.T) {
	ctx := t.Context()
	ep := sharedServer(t).Endpoints()[0]
	prefix := freshPrefix("requeue")
	holder, err := OpenStore(ctx, &Options{Endpoints: []string{ep}, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	p := netproxy.New(t, strings.TrimPrefix(ep, "http://"))
	waiter, err := OpenStore(ctx, &Options{Endpoints: []string{p.Addr()}, Prefix: prefix, SessionTTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	held, got := holdAndQueue(t, holder, waiter, "q")
	p.Freeze()
	waitQueued(t, holder, "q", 1) // the waiter's lease expired on the server
	p.Thaw()
	waitQueued(t, holder, "q", 2) // queued again
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := awaitLock(t, got)
	if r.err != nil {
		t.Fatalf("the waiter's Lock: %v", r.err)
	}
	if r.l.Fence() <= held.Fence() {
		t.Errorf("fence %d not above the holder's %d", r.l.Fence(), held.Fence())
	}
	r.l.Unlock(ctx)
}
