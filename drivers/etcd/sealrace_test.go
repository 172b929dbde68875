package etcd

import (
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/rawdriver"
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
	racers := []driver.SlotLeaseStore{rawdriver.Of(a).(driver.SlotLeaseStore), rawdriver.Of(b).(driver.SlotLeaseStore)}
	sealrace.Run(t, racers, rawdriver.Of(op).(driver.SlotLeaseStore), 20, 2*time.Minute)
}

// TestSealRaceUncreated: the seal races the creation of the namespace by
// the first Acquires.
func TestSealRaceUncreated(t *testing.T) {
	prefix := freshPrefix("sealracenew")
	a, _ := openCounting(t, prefix)
	b, _ := openCounting(t, prefix)
	op, _ := openCounting(t, prefix)
	racers := []driver.SlotLeaseStore{rawdriver.Of(a).(driver.SlotLeaseStore), rawdriver.Of(b).(driver.SlotLeaseStore)}
	sealrace.RunUncreated(t, racers, rawdriver.Of(op).(driver.SlotLeaseStore), 40, 2*time.Minute)
}
