package memory

import (
	"context"
	"fmt"
	"sync"

	"github.com/cosid-go/store/driver"
)

// sealGrantsQueued seals locks only at the door: a Lock after SealLocks is
// refused, but a waiter queued before is still granted the lock once the
// holder unlocks, so an instance left on a store migrated out of holds a
// lock beside the new store's holder. TCK Locks/Seal catches it.
type sealGrantsQueued struct{ *driverStore }

var sealedDoors sync.Map // *state -> true once sealGrantsQueued sealed it

func (b sealGrantsQueued) SealLocks(ctx context.Context) (int64, error) {
	if err := b.begin(ctx); err != nil {
		return 0, err
	}
	defer b.st.mu.Unlock()
	sealedDoors.Store(b.st, true)
	return b.st.fences, nil
}

func (b sealGrantsQueued) LocksSealed(context.Context) (bool, error) {
	_, ok := sealedDoors.Load(b.st)
	return ok, nil
}

func (b sealGrantsQueued) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	if _, ok := sealedDoors.Load(b.st); ok {
		return nil, fmt.Errorf("lock %q: sealed: %w", name, driver.ErrSealed)
	}
	return b.driverStore.Lock(ctx, name, owner, wait)
}

// purgeUnseals forgets the locks' seal in a purge: an instance left on a
// store migrated out of, and purged since, locks beside the new store's
// holders. TCK Locks/Seal catches it.
type purgeUnseals struct{ *driverStore }

func (b purgeUnseals) Purge(ctx context.Context) ([]string, error) {
	deleted, err := b.driverStore.Purge(ctx)
	if err == nil {
		err = b.RaiseLockFences(ctx, 0)
	}
	return deleted, err
}
