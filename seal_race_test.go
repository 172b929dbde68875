package store_test

import (
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/sealrace"
)

// TestSealRace: stores take and renew terms while another seals the
// namespace and reads its slots, as storectl migrate does: the seal is
// checked with each write, so no term starts or grows after it returned.
func TestSealRace(t *testing.T) {
	for _, drv := range []string{"sqlite", "memory"} {
		t.Run(drv, func(t *testing.T) {
			open := purgeStores(t, drv)
			racers := []driver.SlotLeaseStore{open().Driver().(driver.SlotLeaseStore), open().Driver().(driver.SlotLeaseStore)}
			sealrace.Run(t, racers, open().Driver().(driver.SlotLeaseStore), 20, time.Minute)
		})
	}
}

// TestSealRaceUncreated: the seal races the creation of the namespace by
// the first Acquires (the seal creates a missing namespace sealed).
func TestSealRaceUncreated(t *testing.T) {
	for _, drv := range []string{"sqlite", "memory"} {
		t.Run(drv, func(t *testing.T) {
			open := purgeStores(t, drv)
			racers := []driver.SlotLeaseStore{open().Driver().(driver.SlotLeaseStore), open().Driver().(driver.SlotLeaseStore)}
			sealrace.RunUncreated(t, racers, open().Driver().(driver.SlotLeaseStore), 40, time.Minute)
		})
	}
}
