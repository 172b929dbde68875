package etcd

import (
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/eventrec"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// TestReleaseAnswerPastAttemptDeadline: a Release whose write is applied
// and whose answer comes after the round trip's attempt deadline
// (attempts.go; gRPC answers DeadlineExceeded then) succeeded, and says
// so, as with an answer lost
// (TestReleaseLostAnswer). clientv3's own retry resends a transaction cut
// by a deadline shorter than the call's, so the store never sees the cut:
// the resent write fails its compare, and the store, reading its own
// release, reported ErrLeaseLost.
func TestReleaseAnswerPastAttemptDeadline(t *testing.T) {
	ctx := t.Context()
	var armed atomic.Bool
	st := openDriver(t, freshPrefix("releaselate"), func(d *driverStore) {
		d.lateAnswer = func(req any) bool {
			tr, ok := req.(*pb.TxnRequest)
			return ok && len(tr.Compare) > 0 && armed.CompareAndSwap(true, false)
		}
	})
	s := rawdriver.Of(st).(*driverStore)
	ns := driver.Namespace{Name: "n", Limit: 2, Tolerance: time.Second}
	l, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "o", Incarnation: "i", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	releaseArmed(t, s, l, l.Floor+5, &armed, "whose answer came after the attempt deadline")
}

// TestNextAnswerPastAttemptDeadline: a Next whose write is applied and
// whose answer comes after the round trip's attempt deadline (attempts.go)
// leaves its range a gap, and says so (UnknownOutcome: the contract allows
// a gap only where a write's outcome was unknown). Before, clientv3's own
// retry took the cut for a deadline of its own and sent the write again,
// unseen: it failed its compare, Next read the key and returned the range
// after, and nothing reported the gap (a loaded CI run: the TCK's
// Ranges/NeverTwice, "gap [11630, 11730) although nothing failed").
func TestNextAnswerPastAttemptDeadline(t *testing.T) {
	ctx := t.Context()
	var armed atomic.Bool
	ev := eventrec.New()
	st := openDriverOn(t, sharedServer(t).Endpoints(), freshPrefix("nextlate"), func(d *driverStore) {
		d.lateAnswer = func(req any) bool {
			tr, ok := req.(*pb.TxnRequest)
			return ok && len(tr.Compare) > 0 && armed.CompareAndSwap(true, false)
		}
	}, ev.Options()...)
	r, err := st.Ranges().Next(ctx, "k", 10)
	first := r.Start
	if err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	got, err := st.Ranges().Next(ctx, "k", 10)
	if err != nil || got.Start != first+20 {
		t.Fatalf("Next after %d whose first write was applied and answered past its attempt deadline: %v, %v; "+
			"want [%d, %d) (the late write's range a gap)", first, got, err, first+20, first+30)
	}
	unknown := ev.Of(store.UnknownOutcome)
	if len(unknown) != 1 || unknown[0].Key != "k" || unknown[0].Value != first+10 || unknown[0].Count != 10 {
		t.Errorf("UnknownOutcome events after the late write's gap [%d, %d): %+v; want one, for that range",
			first+10, first+20, unknown)
	}
}
