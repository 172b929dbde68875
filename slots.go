package store

import (
	"context"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/cosid-go/store/driver"
)

// DefaultTTL is the lease ttl when AcquireOptions leaves it zero.
const DefaultTTL = 60 * time.Second

// AcquireOptions tune Acquire. The zero value is the default.
type AcquireOptions struct {
	// TTL of the lease, in whole milliseconds (default DefaultTTL).
	TTL time.Duration
	// Preferred slot, tried after the owner's last slots (new(n) for slot
	// n; nil, the default: none). Without one, an Acquire searches from a
	// point of its own (so a fleet starting at once spreads over the
	// namespace): do not set the same preferred slot for many instances.
	Preferred *int
	// Reclaim lets the owner take over a live term of its own owner key under
	// another incarnation (a restarted process getting its slot back).
	Reclaim bool
}

// SlotLeaseStore leases worker slots (Snowflake worker IDs).
type SlotLeaseStore struct{ s *Store }

// Acquire leases a slot of ns for owner (a key that survives restarts),
// under this store's incarnation. Which slot it takes, the new term's
// fence and times, and its errors are [driver.SlotLeaseStore.Acquire]'s
// rules, the same for every driver; a retry after an unknown outcome is
// safe, since it gets the term it already has.
func (l *SlotLeaseStore) Acquire(ctx context.Context, ns Namespace, owner string, opts AcquireOptions) (Lease, error) {
	if opts.TTL == 0 {
		opts.TTL = DefaultTTL
	}
	o := op{name: "Acquire", key: ns.Name, check: firstErr(
		checkNamespace(ns),
		checkName("owner", owner),
		checkMillis("ttl", opts.TTL, time.Millisecond, MaxTTL),
		checkPreferred(opts.Preferred, ns.Limit),
	)}
	return call(ctx, l.s, o, func(ctx context.Context, d driver.SlotLeaseStore) (Lease, error) {
		dl, err := d.Acquire(ctx, driver.AcquireRequest{
			Namespace:   ns.toDriver(),
			Owner:       owner,
			Incarnation: l.s.incarnation,
			TTL:         opts.TTL,
			Preferred:   preferred(opts.Preferred),
			Reclaim:     opts.Reclaim,
		})
		if err != nil {
			return Lease{}, err
		}
		if dl.Slot < 0 || dl.Slot >= ns.Limit || dl.Floor > dl.Ceiling {
			return Lease{}, driverBug("lease of slot %d with floor %d and ceiling %d", dl.Slot, dl.Floor, dl.Ceiling)
		}
		return leaseOf(dl), nil
	})
}

// Renew extends the lease's term and returns the renewed lease; on an
// error it returns lease unchanged. What a renewal extends, when it gives
// ErrLeaseLost, and which leases it refuses as not the store's
// (ErrInvalidArgument) are [driver.SlotLeaseStore.Renew]'s rules; they
// hold for Release and ReleaseUsed too.
func (l *SlotLeaseStore) Renew(ctx context.Context, lease Lease) (Lease, error) {
	o := op{name: "Renew", key: leaseKey(lease), check: checkLease(lease), lease: true, fence: lease.Fence}
	renewed, err := call(ctx, l.s, o, func(ctx context.Context, d driver.SlotLeaseStore) (Lease, error) {
		dl, err := d.Renew(ctx, lease.toDriver())
		return leaseOf(dl), err
	})
	if err != nil {
		return lease, err
	}
	return renewed, nil
}

// Release ends the lease's term without saying which timestamps were used
// (used unknown in [driver.SlotLeaseStore.Release]: the next term starts
// at this term's Ceiling). Call it only after the holder stopped issuing.
func (l *SlotLeaseStore) Release(ctx context.Context, lease Lease) error {
	return l.release(ctx, op{name: "Release", key: leaseKey(lease), check: checkLease(lease)}, lease, -1)
}

// ReleaseUsed ends the lease's term, stating used, the highest timestamp the
// holder issued, from which [driver.SlotLeaseStore.Release] derives where
// the next term starts.
func (l *SlotLeaseStore) ReleaseUsed(ctx context.Context, lease Lease, used int64) error {
	check := checkLease(lease)
	if check == nil && used < 0 {
		check = invalid("used timestamp %d is negative", used)
	}
	return l.release(ctx, op{name: "ReleaseUsed", key: leaseKey(lease), check: check}, lease, used)
}

func (l *SlotLeaseStore) release(ctx context.Context, o op, lease Lease, used int64) error {
	o.lease, o.fence = true, lease.Fence
	return callErr(ctx, l.s, o, func(ctx context.Context, d driver.SlotLeaseStore) error {
		return d.Release(ctx, lease.toDriver(), used)
	})
}

// Namespaces lists every namespace with its settings.
func (l *SlotLeaseStore) Namespaces(ctx context.Context) ([]Namespace, error) {
	return call(ctx, l.s, op{name: "Namespaces"}, func(ctx context.Context, d driver.SlotLeaseStore) ([]Namespace, error) {
		nss, err := d.Namespaces(ctx)
		return convert(nss, namespaceOf), err
	})
}

// Seal seals namespace ns, the way a migration moves it to another store:
// seal it here, then read its slots (List) and seed them there. What a
// seal refuses from then on (every store's Acquire and Renew in ns), what
// still works, and that nothing removes it are
// [driver.SlotLeaseStore.SealNamespace]'s rules. A holder whose renewal is
// refused keeps its term only up to the ExpiresAt it has, then stops
// issuing (an idgen session ends at once).
func (l *SlotLeaseStore) Seal(ctx context.Context, ns string) error {
	o := op{name: "SealNamespace", key: ns, check: checkName("namespace", ns)}
	return callErr(ctx, l.s, o, func(ctx context.Context, d driver.SlotLeaseStore) error {
		return d.SealNamespace(ctx, ns)
	})
}

// List lists every used slot of namespace ns, by slot number.
func (l *SlotLeaseStore) List(ctx context.Context, ns string) ([]SlotInfo, error) {
	o := op{name: "Slots", key: ns, check: checkName("namespace", ns)}
	return call(ctx, l.s, o, func(ctx context.Context, d driver.SlotLeaseStore) ([]SlotInfo, error) {
		infos, err := d.Slots(ctx, ns)
		return convert(infos, slotInfoOf), err
	})
}

func checkLease(l Lease) error {
	if l == (Lease{}) {
		return invalid("the lease is the zero Lease, not one that Acquire returned")
	}
	if err := checkName("namespace", l.Namespace); err != nil {
		return err
	}
	if err := checkName("owner", l.Owner); err != nil {
		return err
	}
	if err := checkIncarnation(l.Incarnation, MaxIncarnation); err != nil {
		return err
	}
	if err := checkSlot("slot", l.Slot, MaxSlots); err != nil {
		return err
	}
	if l.Fence < 1 {
		return invalid("fence %d is not a lease's (leases start at 1)", l.Fence)
	}
	return checkMillis("ttl", l.TTL, time.Millisecond, MaxTTL)
}

func leaseKey(l Lease) string {
	if l.Namespace == "" {
		return ""
	}
	return l.Namespace + "/" + strconv.Itoa(l.Slot)
}

// Seed raises a slot's history in this store, for a migration, by the
// rules of [driver.SlotSeeder.SeedSlot]: the slot's next term gets a
// fence above fence and a floor of at least nextFloor. Drivers without the
// capability give ErrUnsupported.
func (l *SlotLeaseStore) Seed(ctx context.Context, ns Namespace, slot int, fence, nextFloor int64) error {
	check := firstErr(checkNamespace(ns), checkSlot("slot", slot, ns.Limit))
	if check == nil && (fence < 0 || nextFloor < 0) {
		check = invalid("fence %d and next floor %d must not be negative", fence, nextFloor)
	}
	o := op{name: "Seed", key: ns.Name + "/" + strconv.Itoa(slot), check: check}
	return callErr(ctx, l.s, o, func(ctx context.Context, d driver.SlotSeeder) error {
		return d.SeedSlot(ctx, ns.toDriver(), slot, fence, nextFloor)
	})
}

// MaxLayout is the longest layout KeepLayout accepts, in bytes.
const MaxLayout = 1024

// KeepLayout records layout as the layout of namespace ns's IDs if it has
// none yet and returns the namespace's layout, by the rules of
// [driver.LayoutKeeper.KeepLayout]. A generator compares it with its own
// (idgen's Snowflake does, and refuses another layout). Drivers without
// the capability give ErrUnsupported.
func (l *SlotLeaseStore) KeepLayout(ctx context.Context, ns Namespace, layout string) (string, error) {
	check := checkNamespace(ns)
	if check == nil && (layout == "" || len(layout) > MaxLayout) {
		check = invalid("layout of %d bytes is not 1 to %d bytes long", len(layout), MaxLayout)
	}
	for _, r := range layout {
		if check == nil && (r < 0x20 || r == 0x7F || !utf8.ValidRune(r) || r == utf8.RuneError) {
			check = invalid("layout %q must not contain the character %U", layout, r)
		}
	}
	o := op{name: "KeepLayout", key: ns.Name, check: check}
	return call(ctx, l.s, o, func(ctx context.Context, d driver.LayoutKeeper) (string, error) {
		return d.KeepLayout(ctx, ns.toDriver(), layout)
	})
}

// Layout returns the layout namespace ns's IDs were issued with (see
// KeepLayout), "" when none is recorded or the namespace is missing.
// Drivers without the capability give ErrUnsupported.
func (l *SlotLeaseStore) Layout(ctx context.Context, ns string) (string, error) {
	o := op{name: "Layout", key: ns, check: checkName("namespace", ns)}
	return call(ctx, l.s, o, func(ctx context.Context, d driver.LayoutKeeper) (string, error) {
		return d.Layout(ctx, ns)
	})
}

// checkPreferred checks a preferred slot, if one is set.
func checkPreferred(p *int, limit int) error {
	if p == nil {
		return nil
	}
	return checkSlot("preferred slot", *p, limit)
}

// preferred is the driver's form of a preferred slot: -1 for none.
func preferred(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}
