package zookeeper

import (
	"testing"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestSealLostAnswer: a seal whose write landed with its answer lost (the
// connection dropped after the request went out) is retried and reported
// done, for a namespace in use (the set of its node) and for a missing one
// (the create): either way the namespace is sealed once, Acquire and Renew
// give ErrSealed, and a second seal is a no-op.
func TestSealLostAnswer(t *testing.T) {
	addr := zktest.StartServer(t, zktest.Versions()[0]).Addr()
	var w wire
	o := testOptions(addr, nil)
	s, other := openTest(t, o, &w), openTest(t, o, nil)
	ns := driver.Namespace{Name: "used", Limit: 2}
	l := mustAcquire(t, other, slotRequest(ns, "a", "run"))
	for _, c := range []struct {
		name string
		op   int32
	}{{"used", opSetData}, {"missing", opMulti}} {
		sent := w.dropFirstAnswer(c.op)
		if err := s.SealNamespace(t.Context(), c.name); err != nil {
			t.Fatalf("seal of %s across a lost answer: %v", c.name, err)
		}
		if !sent() {
			t.Fatalf("seal of %s sent no request %d", c.name, c.op)
		}
		if err := s.SealNamespace(t.Context(), c.name); err != nil {
			t.Fatalf("second seal of %s: %v", c.name, err)
		}
		nss, err := other.Namespaces(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		sealed := false
		for _, n := range nss {
			sealed = sealed || n.Name == c.name && n.Sealed
		}
		if !sealed {
			t.Errorf("namespaces after the seal of %s: %+v, want it sealed", c.name, nss)
		}
		_, err = other.Acquire(t.Context(), slotRequest(driver.Namespace{Name: c.name, Limit: 2}, "b", "run"))
		wantIs(t, err, driver.ErrSealed, "Acquire in "+c.name+" after the seal")
	}
	_, err := other.Renew(t.Context(), l)
	wantIs(t, err, driver.ErrSealed, "Renew after the seal")
}
