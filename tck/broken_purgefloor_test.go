package tck_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/tck"
)

// The memory driver keeps no slot timestamp floor across purges (its clock
// is the store's own): a suite that says it does is caught by the check,
// as an etcd suite that forgot to say so was.
func init() {
	variants = append(variants,
		variant{name: "purge-floor-declared", checks: []string{"History/PurgeSlotFloor"}, suite: func(*testing.T) tck.Suite { return memSuite() }},
		variant{name: "purge-floor-misdeclared", checks: []string{"History/PurgeSlotFloor"}, broken: true, suite: func(*testing.T) tck.Suite {
			s := memSuite()
			s.PurgeKeepsSlotFloor = true
			return s
		}},
	)
}

// A memory store that keeps a slot timestamp floor across purges, as the
// etcd driver does: from the next floors of the slots it deletes and,
// with ceilings, from the ceilings of terms it deletes unreleased
// (SlotRecord.NewTerm). Without ceilings it is the bug the etcd driver
// was given blind (issue 39), caught by the check.
func init() {
	keeper := func(ceilings bool) func(*testing.T) tck.Suite {
		return func(t *testing.T) tck.Suite {
			s := faultSuite(func(d memDriver, sh *shared) driver.Store { return floorKeeper{d, sh, ceilings} })(t)
			s.PurgeKeepsSlotFloor = true
			return s
		}
	}
	variants = append(variants,
		variant{name: "purge-floor-kept", checks: []string{"History/PurgeSlotFloor"}, suite: keeper(true)},
		variant{name: "purge-floor-no-ceilings", checks: []string{"History/PurgeSlotFloor"}, broken: true, suite: keeper(false)},
	)
}

type floorKeeper struct {
	memDriver
	sh       *shared
	ceilings bool
}

// keptFloor is the floor a floorKeeper's purges kept.
type keptFloor struct{ atomic.Int64 }

func (s floorKeeper) Purge(ctx context.Context) ([]string, error) {
	nss, err := s.Namespaces(ctx)
	if err != nil {
		return nil, err
	}
	floor := int64(0)
	for _, ns := range nss {
		infos, err := s.Slots(ctx, ns.Name)
		if err != nil {
			return nil, err
		}
		for _, in := range infos {
			floor = max(floor, in.NextFloor)
			if s.ceilings && in.Owner != "" {
				floor = max(floor, in.Ceiling)
			}
		}
	}
	deleted, err := s.memDriver.Purge(ctx)
	if err == nil {
		kept := sharedOf[keptFloor](s.sh)
		kept.Store(max(kept.Load(), floor))
	}
	return deleted, err
}

// Acquire starts the slots of a namespace made after a purge at the floor
// kept: seeded there before the first Acquire.
func (s floorKeeper) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	if floor := sharedOf[keptFloor](s.sh).Load(); floor > 0 {
		if _, err := s.Slots(ctx, req.Namespace.Name); errors.Is(err, driver.ErrNotFound) {
			for n := range req.Namespace.Limit {
				if err := s.SeedSlot(ctx, req.Namespace, n, 0, floor); err != nil {
					return driver.Lease{}, err
				}
			}
		}
	}
	return s.memDriver.Acquire(ctx, req)
}
