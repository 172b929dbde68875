package etcd

import (
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/sealrace"
)

// TestSealRace: two stores take and renew terms while a third seals the
// namespace and reads its slots, on a real server: Acquire's and Renew's
// transactions compare the namespace key's mod revision, which the seal
// changes, so no term starts or grows after the seal returned.
func TestSealRace(t *testing.T) {
	prefix := freshPrefix("sealrace")
	a, _ := openCounting(t, prefix)
	b, _ := openCounting(t, prefix)
	op, _ := openCounting(t, prefix)
	racers := []driver.SlotLeaseStore{a.Driver().(driver.SlotLeaseStore), b.Driver().(driver.SlotLeaseStore)}
	sealrace.Run(t, racers, op.Driver().(driver.SlotLeaseStore), 20, 2*time.Minute)
}

// TestSealRaceUncreated: the seal races the creation of the namespace by
// the first Acquires.
func TestSealRaceUncreated(t *testing.T) {
	prefix := freshPrefix("sealracenew")
	a, _ := openCounting(t, prefix)
	b, _ := openCounting(t, prefix)
	op, _ := openCounting(t, prefix)
	racers := []driver.SlotLeaseStore{a.Driver().(driver.SlotLeaseStore), b.Driver().(driver.SlotLeaseStore)}
	sealrace.RunUncreated(t, racers, op.Driver().(driver.SlotLeaseStore), 40, 2*time.Minute)
}
