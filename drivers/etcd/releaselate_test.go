package etcd

import (
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cosid-go/store/driver"
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
