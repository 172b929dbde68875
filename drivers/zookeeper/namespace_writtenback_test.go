package zookeeper

import (
	"errors"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestWrittenBackUnsealedNamespace: a namespace sealed by a store (moved
// to another store) and written back from a copy taken before the seal:
// the store that sealed it must not start terms in it again (ErrSealed
// or ErrCorrupt), or the store it moved to and this one hand out one
// worker ID (slot_nsguard.go).
func TestWrittenBackUnsealedNamespace(t *testing.T) {
	onEachVersion(t, func(_ *zktest.Server) []serverCheck {
		return []serverCheck{{"Acquire", testWrittenBackUnsealedNamespace}}
	})
}

func testWrittenBackUnsealedNamespace(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	ctx := t.Context()
	ns := driver.Namespace{Name: "back", Limit: 1, Tolerance: time.Second}
	l := mustAcquire(t, s, slotRequest(ns, "a", "1"))
	if err := s.Release(ctx, l, -1); err != nil {
		t.Fatal(err)
	}
	conn := rawConn(t, addr)
	path := s.nsPath(ns.Name)
	data, _, err := conn.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SealNamespace(ctx, ns.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set(path, data, -1); err != nil {
		t.Fatal(err)
	}
	got, err := s.Acquire(ctx, slotRequest(ns, "b", "1"))
	switch {
	case errors.Is(err, driver.ErrSealed), errors.Is(err, driver.ErrCorrupt):
		t.Logf("Acquire after the write-back: %v", err)
	case err != nil:
		t.Fatalf("Acquire after the write-back: %v; want ErrSealed or ErrCorrupt", err)
	default:
		t.Errorf("the store that sealed namespace %s started a term in it once a copy from before the seal was "+
			"written back: slot %d fence %d", ns.Name, got.Slot, got.Fence)
	}
}
