package store_test

import (
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/rawdriver"
	"github.com/cosid-go/store/internal/testing/sealrace"
)

// TestSealRace: stores take and renew terms while another seals the
// namespace and reads its slots, as storectl migrate does: the seal is
// checked with each write, so no term starts or grows after it returned.
func TestSealRace(t *testing.T) {
	for _, drv := range []string{"sqlite", "memory"} {
		t.Run(drv, func(t *testing.T) {
			open := purgeStores(t, drv)
			racers := []driver.SlotLeaseStore{rawdriver.Of(open()).(driver.SlotLeaseStore), rawdriver.Of(open()).(driver.SlotLeaseStore)}
			sealrace.Run(t, racers, rawdriver.Of(open()).(driver.SlotLeaseStore), 20, time.Minute)
		})
	}
}

// TestSealRaceUncreated: the seal races the creation of the namespace by
// the first Acquires (the seal creates a missing namespace sealed).
func TestSealRaceUncreated(t *testing.T) {
	for _, drv := range []string{"sqlite", "memory"} {
		t.Run(drv, func(t *testing.T) {
			open := purgeStores(t, drv)
			racers := []driver.SlotLeaseStore{rawdriver.Of(open()).(driver.SlotLeaseStore), rawdriver.Of(open()).(driver.SlotLeaseStore)}
			sealrace.RunUncreated(t, racers, rawdriver.Of(open()).(driver.SlotLeaseStore), 40, time.Minute)
		})
	}
}
