package postgres

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/pgtest"
)

// TestAcquireTriedAgainForgetsExhausted: an Acquire whose first attempt
// found every slot held, and whose COMMIT the server then refused (the
// transaction ended for idling, SQLSTATE 25P03, tried again), takes the
// slot freed meanwhile in its second attempt. It must return that term:
// it once returned the first attempt's ErrExhausted, with the second's
// term committed, a live term of a slot its caller does not know it holds
// (nobody renews or releases it until it expires).
func TestAcquireTriedAgainForgetsExhausted(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	schema := freshSchema("retryexh")
	a := openAt(t, srv.ConnString(), schema, map[string]string{"lockTimeout": "2s"}) // idle bound 500 ms
	b := openAt(t, srv.ConnString(), schema, nil)
	ctx := t.Context()
	ns := driver.Namespace{Name: "w", Limit: 1, Tolerance: 100 * time.Millisecond}
	held, err := b.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "b", Incarnation: "1", TTL: time.Minute, Preferred: -1})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	setHook(a, func(point string) {
		// The exhausted search's last read (the listing that names why).
		if !strings.HasSuffix(point, "WHERE namespace = $1 ORDER BY slot") {
			return
		}
		once.Do(func() {
			if err := b.Release(ctx, held, -1); err != nil {
				t.Error(err)
			}
			time.Sleep(1500 * time.Millisecond) // the stall: three idle bounds, then the COMMIT
		})
	})
	l, err := a.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "1", TTL: time.Minute, Preferred: -1})
	a.health.hook.Store(nil)
	slots, lerr := b.Slots(ctx, "w")
	if lerr != nil {
		t.Fatal(lerr)
	}
	if errors.Is(err, driver.ErrExhausted) && len(slots) == 1 && slots[0].Owner == "a" {
		t.Fatalf("Acquire returned %v, and slot 0 holds its term %+v", err, slots[0])
	}
	if err != nil {
		t.Fatalf("Acquire after a retried COMMIT: %v; want the freed slot", err)
	}
	if l.Slot != 0 || l.Owner != "a" {
		t.Fatalf("Acquire: %+v", l)
	}
}
