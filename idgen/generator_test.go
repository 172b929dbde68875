package idgen_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/idgen"
)

// deaf is a range driver whose Next, once blocked, ignores its context
// until released: a store that does not answer a cancellation.
type deaf struct {
	blocked chan struct{} // closed when a Next is held
	release chan struct{}
	calls   int
}

func (d *deaf) Close() error { return nil }
func (d *deaf) Next(_ context.Context, _ string, step int64) (int64, error) {
	d.calls++
	if d.calls == 1 {
		return 0, nil
	}
	close(d.blocked)
	<-d.release
	return step * int64(d.calls-1), nil
}
func (d *deaf) Current(context.Context, string) (int64, bool, error) { return 0, false, nil }
func (d *deaf) Seal(context.Context, string) (int64, error)          { return 0, nil }
func (d *deaf) Init(context.Context, string, int64) error            { return nil }
func (d *deaf) Keys(context.Context) ([]string, error)               { return nil, nil }

var _ driver.RangeStore = (*deaf)(nil)

// TestSegmentCloseBoundedByContext: Close(ctx) waits for the fetch in
// flight only as long as ctx allows, then reports it; the fetch ends once
// the store answers (goleak in TestMain checks that nothing is left).
func TestSegmentCloseBoundedByContext(t *testing.T) {
	d := &deaf{blocked: make(chan struct{}), release: make(chan struct{})}
	st, err := store.OpenDriver(d)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g, err := idgen.NewSegment(t.Context(), st, "k", idgen.SegmentOptions{Step: 4, MinPrefetch: 4, MaxPrefetch: 4})
	if err != nil {
		t.Fatal(err)
	}
	take(t, g, 1) // below the prefetch distance: a fetch starts
	<-d.blocked
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err = g.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close with the fetch held: %v, want DeadlineExceeded", err)
	}
	if _, err := g.NextID(t.Context()); !errors.Is(err, idgen.ErrClosed) {
		t.Errorf("NextID after Close: %v, want ErrClosed", err)
	}
	close(d.release)
	if err := g.Close(t.Context()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
