package postgres

import (
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/sealrace"
)

// TestSealRace: two stores take and renew terms while a third seals the
// namespace and reads its slots, on a real server: Acquire and Renew read
// the namespace row under a share lock before they write, and the seal
// writes that row, so no term starts or grows after the seal returned.
func TestSealRace(t *testing.T) {
	srv := pgtest.Shared(t)
	schema := freshSchema("sealrace")
	racers := []driver.SlotLeaseStore{openAt(t, srv.ConnString(), schema, nil), openAt(t, srv.ConnString(), schema, nil)}
	sealrace.Run(t, racers, openAt(t, srv.ConnString(), schema, nil), 20, 2*time.Minute)
}

// TestSealRaceUncreated: the seal races the creation of the namespace by
// the first Acquires.
func TestSealRaceUncreated(t *testing.T) {
	srv := pgtest.Shared(t)
	schema := freshSchema("sealracenew")
	racers := []driver.SlotLeaseStore{openAt(t, srv.ConnString(), schema, nil), openAt(t, srv.ConnString(), schema, nil)}
	sealrace.RunUncreated(t, racers, openAt(t, srv.ConnString(), schema, nil), 40, 2*time.Minute)
}
