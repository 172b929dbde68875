package store_test

import (
	"context"
	"testing"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// slotsOnly is a slot driver that records the state it was handed back.
type slotsOnly struct{ renewed, released []any }

type token struct{ version int }

func (s *slotsOnly) Close() error { return nil }
func (s *slotsOnly) Acquire(_ context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	return driver.Lease{Namespace: req.Namespace.Name, Owner: req.Owner, Incarnation: req.Incarnation,
		Fence: 1, TTL: req.TTL, Ceiling: 10, State: &token{1}}, nil
}
func (s *slotsOnly) Renew(_ context.Context, l driver.Lease) (driver.Lease, error) {
	s.renewed = append(s.renewed, l.State)
	l.State = &token{2}
	return l, nil
}
func (s *slotsOnly) Release(_ context.Context, l driver.Lease, _ int64) error {
	s.released = append(s.released, l.State)
	return nil
}
func (s *slotsOnly) SealNamespace(context.Context, string) error            { return nil }
func (s *slotsOnly) Namespaces(context.Context) ([]driver.Namespace, error) { return nil, nil }
func (s *slotsOnly) Slots(context.Context, string) ([]driver.SlotInfo, error) {
	return nil, nil
}

// TestLeaseCarriesDriverState: the driver's state of a term travels from
// Acquire to Renew to Release inside store.Lease, out of the user's reach;
// a lease rebuilt by hand from its exported fields reaches the driver
// without one.
func TestLeaseCarriesDriverState(t *testing.T) {
	d := &slotsOnly{}
	st, err := store.OpenDriver(d)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	l, err := st.Slots().Acquire(ctx, store.Namespace{Name: "w", Limit: 1}, "o", store.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.Slots().Renew(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Slots().Release(ctx, r); err != nil {
		t.Fatal(err)
	}
	byHand := store.Lease{Namespace: l.Namespace, Slot: l.Slot, Owner: l.Owner, Incarnation: l.Incarnation,
		Fence: l.Fence, TTL: l.TTL, Tolerance: l.Tolerance, Floor: l.Floor, ExpiresAt: l.ExpiresAt, Ceiling: l.Ceiling}
	if err := st.Slots().ReleaseUsed(ctx, byHand, 3); err != nil {
		t.Fatal(err)
	}
	if len(d.renewed) != 1 || d.renewed[0].(*token).version != 1 {
		t.Errorf("Renew got state %v, want Acquire's", d.renewed)
	}
	if len(d.released) != 2 || d.released[0].(*token).version != 2 || d.released[1] != nil {
		t.Errorf("Release got states %v, want Renew's and then none", d.released)
	}
}
