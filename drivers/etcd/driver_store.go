package etcd

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
)

// driverStore is the driver's store: the connection and a part per
// capability, each on that connection (files etcd.go, range_*, slot_*,
// lock_*; Purge, which spans them, in purge.go).
type driverStore struct {
	*etcdStore
	*rangeStore
	*slotStore
	*lockStore
}

// The parts' methods are promoted to driverStore; a name two parts both
// had would drop out of its method set, which these catch.
var (
	_ driver.RangeStore     = (*driverStore)(nil)
	_ driver.SlotLeaseStore = (*driverStore)(nil)
	_ driver.SlotSeeder     = (*driverStore)(nil)
	_ driver.LayoutKeeper   = (*driverStore)(nil)
	_ driver.Locker         = (*driverStore)(nil)
	_ driver.Purger         = (*driverStore)(nil)
	_ driver.Connector      = (*driverStore)(nil)
	_ driver.Pinger         = (*driverStore)(nil)
	_ driver.Notifier       = (*driverStore)(nil)
	_ driver.Identifier     = (*driverStore)(nil)
)

func newStore(cfg config, cli *clientv3.Client) *driverStore {
	ctx, cancel := context.WithCancel(context.Background())
	s := &etcdStore{
		cfg: cfg, cli: cli, ownCli: cli == nil,
		ctx:     ctx,
		cancel:  cancel,
		closing: make(chan struct{}),
	}
	return &driverStore{
		etcdStore:  s,
		rangeStore: &rangeStore{etcdStore: s, ranges: map[string]rangeMemo{}},
		slotStore:  &slotStore{etcdStore: s, now: func() int64 { return time.Now().UnixMilli() }},
		lockStore:  &lockStore{etcdStore: s},
	}
}

// Close ends the lock session (revoking its lease, so the next waiters get
// the locks at once) and every goroutine, then the client if it is the
// store's own.
func (s *driverStore) Close() error {
	close(s.closing)
	s.closeLocks()
	return s.shutdown()
}
