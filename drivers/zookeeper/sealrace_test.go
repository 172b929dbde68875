package zookeeper

import (
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/sealrace"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestSealRace: two stores take and renew terms while a third seals the
// namespace and reads its slots, on a real server: an acquire's and a
// renewal's multi check the version of the namespace node they read, which
// the seal rewrites, so no term starts or grows after the seal returned.
func TestSealRace(t *testing.T) {
	for _, version := range zktest.Versions() {
		t.Run(version, func(t *testing.T) {
			o := testOptions(zktest.StartServer(t, version).Addr(), nil)
			racers := []driver.SlotLeaseStore{openTest(t, o, nil), openTest(t, o, nil)}
			sealrace.Run(t, racers, openTest(t, o, nil), 20, 2*time.Minute)
		})
	}
}

// TestSealRaceUncreated: the seal races the creation of the namespace by
// the first acquires.
func TestSealRaceUncreated(t *testing.T) {
	o := testOptions(zktest.StartServer(t, zktest.Versions()[0]).Addr(), nil)
	racers := []driver.SlotLeaseStore{openTest(t, o, nil), openTest(t, o, nil)}
	sealrace.RunUncreated(t, racers, openTest(t, o, nil), 40, 2*time.Minute)
}
