package store

import (
	"context"
	"strconv"
	"time"

	"github.com/cosid-go/store/driver"
)

// Namespace names a set of slots 0..Limit-1 and its clock tolerance. Both
// settings are fixed when the namespace is first used; using it with other
// values gives ErrConfigMismatch.
type Namespace = driver.Namespace

// Lease is one term of one slot. Times are milliseconds since the Unix epoch
// in the store's clock. The holder may issue timestamps t with
// Floor <= t < Ceiling, and stops when its clock reaches ExpiresAt. State is
// the driver's own; pass the Lease back unchanged.
type Lease = driver.Lease

// SlotInfo describes one used slot (for tools).
type SlotInfo = driver.SlotInfo

// DefaultTTL is the lease ttl when AcquireOptions leaves it zero.
const DefaultTTL = 60 * time.Second

// AcquireOptions tune Acquire. The zero value is the default.
type AcquireOptions struct {
	// TTL of the lease, in whole milliseconds (default DefaultTTL).
	TTL time.Duration
	// Preferred slot, tried after the owner's last slots. Zero needs no
	// flag: slot 0 is also the first free slot tried.
	Preferred int
	// Reclaim lets the owner take over a live term of its own owner key under
	// another incarnation (a restarted process getting its slot back).
	Reclaim bool
}

// SlotLeaseStore leases worker slots (Snowflake worker IDs).
type SlotLeaseStore struct{ s *Store }

func (l *SlotLeaseStore) drv() (driver.SlotStore, error) {
	d, ok := l.s.drv.(driver.SlotStore)
	if !ok {
		return nil, ErrUnsupported
	}
	return d, nil
}

// Acquire leases a slot of ns for owner (a key that survives restarts),
// under this store's incarnation. It prefers, in order, the slots the owner
// held last, opts.Preferred, then the lowest free slot; a live term of the
// same owner and incarnation is returned as it is, so retrying after an
// unknown outcome is safe. No free slot: ErrExhausted.
func (l *SlotLeaseStore) Acquire(ctx context.Context, ns Namespace, owner string, opts AcquireOptions) (Lease, error) {
	ctx, cancel, err := l.s.begin(ctx, true)
	defer cancel()
	if opts.TTL == 0 {
		opts.TTL = DefaultTTL
	}
	if err == nil {
		err = checkNamespace(ns)
	}
	if err == nil {
		err = checkName("owner", owner)
	}
	if err == nil {
		err = checkMillis("ttl", opts.TTL, time.Millisecond, MaxTTL)
	}
	if err == nil && (opts.Preferred < 0 || opts.Preferred >= ns.Limit) {
		err = invalid("preferred slot %d is outside [0, %d)", opts.Preferred, ns.Limit)
	}
	var d driver.SlotStore
	if err == nil {
		d, err = l.drv()
	}
	if err != nil {
		return Lease{}, wrap(ctx, "Acquire", ns.Name, err)
	}
	lease, err := d.Acquire(ctx, driver.AcquireRequest{
		Namespace:   ns,
		Owner:       owner,
		Incarnation: l.s.incarnation,
		TTL:         opts.TTL,
		Preferred:   opts.Preferred,
		Reclaim:     opts.Reclaim,
	})
	if err == nil && (lease.Slot < 0 || lease.Slot >= ns.Limit || lease.Floor > lease.Ceiling) {
		err = driverBug("lease of slot %d with floor %d and ceiling %d", lease.Slot, lease.Floor, lease.Ceiling)
	}
	if err != nil {
		return Lease{}, wrap(ctx, "Acquire", ns.Name, l.s.closedErr(err))
	}
	return lease, nil
}

// Renew extends the lease's term and returns the renewed lease; ExpiresAt
// and Ceiling never decrease. If the slot now holds another term:
// ErrLeaseLost. A renew after ExpiresAt that finds the term untouched
// continues it.
func (l *SlotLeaseStore) Renew(ctx context.Context, lease Lease) (Lease, error) {
	ctx, cancel, err := l.s.begin(ctx, true)
	defer cancel()
	if err == nil {
		err = checkLease(lease)
	}
	var d driver.SlotStore
	if err == nil {
		d, err = l.drv()
	}
	if err != nil {
		return lease, wrap(ctx, "Renew", leaseKey(lease), err)
	}
	renewed, err := d.Renew(ctx, lease)
	if err != nil {
		return lease, wrap(ctx, "Renew", leaseKey(lease), l.s.closedErr(err))
	}
	return renewed, nil
}

// Release ends the lease's term without saying which timestamps were used:
// the next term starts at this term's Ceiling. Call it only after the holder
// stopped issuing.
func (l *SlotLeaseStore) Release(ctx context.Context, lease Lease) error {
	return l.release(ctx, lease, -1)
}

// ReleaseUsed ends the lease's term, stating used, the highest timestamp the
// holder issued: the next term may start right above it.
func (l *SlotLeaseStore) ReleaseUsed(ctx context.Context, lease Lease, used int64) error {
	if used < 0 {
		return wrap(ctx, "Release", leaseKey(lease), invalid("used timestamp %d is negative", used))
	}
	return l.release(ctx, lease, used)
}

func (l *SlotLeaseStore) release(ctx context.Context, lease Lease, used int64) error {
	ctx, cancel, err := l.s.begin(ctx, true)
	defer cancel()
	if err == nil {
		err = checkLease(lease)
	}
	var d driver.SlotStore
	if err == nil {
		d, err = l.drv()
	}
	if err == nil {
		err = l.s.closedErr(d.Release(ctx, lease, used))
	}
	return wrap(ctx, "Release", leaseKey(lease), err)
}

// Namespaces lists every namespace with its settings.
func (l *SlotLeaseStore) Namespaces(ctx context.Context) ([]Namespace, error) {
	ctx, cancel, err := l.s.begin(ctx, true)
	defer cancel()
	var d driver.SlotStore
	if err == nil {
		d, err = l.drv()
	}
	var out []Namespace
	if err == nil {
		out, err = d.Namespaces(ctx)
		err = l.s.closedErr(err)
	}
	return nonNil(out), wrap(ctx, "Namespaces", "", err)
}

// Slots lists every used slot of namespace ns, by slot number.
func (l *SlotLeaseStore) Slots(ctx context.Context, ns string) ([]SlotInfo, error) {
	ctx, cancel, err := l.s.begin(ctx, true)
	defer cancel()
	if err == nil {
		err = checkName("namespace", ns)
	}
	var d driver.SlotStore
	if err == nil {
		d, err = l.drv()
	}
	var out []SlotInfo
	if err == nil {
		out, err = d.Slots(ctx, ns)
		err = l.s.closedErr(err)
	}
	return nonNil(out), wrap(ctx, "Slots", ns, err)
}

func checkLease(l Lease) error {
	if err := checkName("namespace", l.Namespace); err != nil {
		return err
	}
	if err := checkName("owner", l.Owner); err != nil {
		return err
	}
	if err := checkIncarnation(l.Incarnation); err != nil {
		return err
	}
	if l.Slot < 0 || l.Slot >= MaxSlots {
		return invalid("slot %d is outside [0, %d)", l.Slot, MaxSlots)
	}
	if l.Fence < 1 {
		return invalid("fence %d is not a lease's (leases start at 1)", l.Fence)
	}
	return checkMillis("ttl", l.TTL, time.Millisecond, MaxTTL)
}

func leaseKey(l Lease) string { return l.Namespace + "/" + strconv.Itoa(l.Slot) }

// Seed raises a slot's history in this store, for a migration: the slot's
// next term gets a fence above fence and a floor of at least nextFloor.
// Nothing is lowered, so seeding twice is harmless; a slot with a live term
// gives ErrLocked. Drivers without the capability give ErrUnsupported.
func (l *SlotLeaseStore) Seed(ctx context.Context, ns Namespace, slot int, fence, nextFloor int64) error {
	ctx, cancel, err := l.s.begin(ctx, true)
	defer cancel()
	if err == nil {
		err = checkNamespace(ns)
	}
	if err == nil && (slot < 0 || slot >= ns.Limit) {
		err = invalid("slot %d is outside [0, %d)", slot, ns.Limit)
	}
	if err == nil && (fence < 0 || nextFloor < 0) {
		err = invalid("fence %d and next floor %d must not be negative", fence, nextFloor)
	}
	if err == nil {
		d, ok := l.s.drv.(driver.SlotSeeder)
		if !ok {
			err = ErrUnsupported
		} else {
			err = l.s.closedErr(d.SeedSlot(ctx, ns, slot, fence, nextFloor))
		}
	}
	return wrap(ctx, "Seed", ns.Name+"/"+strconv.Itoa(slot), err)
}
