package etcd

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
)

// An Acquire that finds no free slot because one is unusable (its key
// does not decode) says so, naming the key and the reason once, rather
// than calling every slot held: the operator repairs that one, where a
// held slot only waits for its term.
func TestExhaustedNamesUnusableSlots(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("unusable")
	s := openShifted(t, prefix, 0)
	ns := driver.Namespace{Name: "n", Limit: 2, Tolerance: time.Millisecond}
	held, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "i", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	bad := prefix + "/slot/n/" + map[int]string{0: "1", 1: "0"}[held.Slot]
	if _, err := rawClient(t).Put(ctx, bad, "not a slot record"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "b", Incarnation: "i", TTL: time.Minute})
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if !errors.Is(err, driver.ErrExhausted) || !strings.Contains(msg, "passed over 1 unusable") ||
		!strings.Contains(msg, bad) || strings.Count(msg, driver.ErrCorrupt.Error()) != 1 {
		t.Errorf("Acquire with slot %d held and %s not a record: %v; want ErrExhausted saying it passed over 1 unusable, "+
			"naming the key and %q once", held.Slot, bad, err, driver.ErrCorrupt.Error())
	}
}
