package etcd

import (
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/purgerace"
)

// TestPurgeLiveLeaseRace: one store takes leases in a loop while another
// purges, on a real server: the purge's transaction holds only if no key
// changed since it read them, so no purge deletes a term that was live.
func TestPurgeLiveLeaseRace(t *testing.T) {
	prefix := freshPrefix("purgerace")
	a, _ := openCounting(t, prefix)
	op, _ := openCounting(t, prefix)
	purgerace.Run(t, a.Driver().(driver.SlotLeaseStore), op.Driver().(driver.Purger), 10, time.Minute)
}
