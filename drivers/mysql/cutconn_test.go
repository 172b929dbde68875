package mysql

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/mysqltest"
)

// TestExecCutByContext: a Next whose context ends while its network is
// silent returns at once with the context's error (the statement's
// socket is cut: go-sql-driver's own watcher is not used, cutconn.go);
// the cut connection is never used again: on a pool of one connection,
// the next Next, with the network back, succeeds at its first try and
// starts above every value handed out.
func TestExecCutByContext(t *testing.T) {
	t.Parallel()
	srv := mysqltest.Shared(t)
	database := srv.NewDatabase(t)
	p := mysqltest.NewProxy(t, srv.Addr())
	s := openAt(t, p.Addr(), database, map[string]string{"poolSize": "1"})
	ctx := t.Context()
	first, err := s.Next(ctx, "k", 10)
	if err != nil {
		t.Fatal(err)
	}
	p.Freeze()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	start := time.Now()
	_, err = s.Next(short, "k", 10)
	took := time.Since(start)
	cancel()
	p.Thaw()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next on a silent network past its deadline: %v, want context.DeadlineExceeded", err)
	}
	if took > 2*time.Second {
		t.Errorf("Next took %v to give up after its 200ms deadline", took)
	}
	next, err := s.Next(ctx, "k", 10)
	if err != nil {
		t.Fatalf("Next after the network came back, on a pool of one connection: %v", err)
	}
	if next < first+10 {
		t.Fatalf("Next after the cut gave %d, not above the first range [%d, %d)", next, first, first+10)
	}
	// The driver's own path: a call whose context cannot end runs
	// unwatched, and a context ended before the call is refused.
	if _, err := s.Next(context.WithoutCancel(ctx), "k", 10); err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Next(done, "k", 10); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next with a cancelled context: %v", err)
	}
}
