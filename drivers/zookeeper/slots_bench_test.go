package zookeeper

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// BenchmarkSlots measures, on one server per version, the slot operations
// through the user API (with its per-operation timeout) against the raw
// cost of the round trips they are made of, written straight on
// go-zookeeper. Acquire (of the owner's last slot, released before each
// acquire) is 3 round trips, and RawAcquireTrips sends the same requests in
// the same 3 round trips without the logic; Renew and Release are one
// compare-and-set each, and RawCAS is one.
//
//	go test -run '^$' -bench Slots -benchtime 3s ./drivers/zookeeper/
func BenchmarkSlots(b *testing.B) {
	zktest.EachVersion(b, func(b *testing.B, srv *zktest.Server) {
		addr := srv.Addr()
		b.Run("Acquire", func(b *testing.B) { benchAcquire(b, addr) })
		b.Run("RawAcquireTrips", func(b *testing.B) { benchRawAcquireTrips(b, addr) })
		b.Run("Renew", func(b *testing.B) { benchRenew(b, addr) })
		b.Run("Release", func(b *testing.B) { benchRelease(b, addr) })
		b.Run("RawCAS", func(b *testing.B) { benchSlotRawCAS(b, addr) })
	})
}

var benchNamespace = store.Namespace{Name: "bench", Limit: 1024, Tolerance: time.Second}

func benchSlots(b *testing.B, addr string) *store.SlotLeaseStore {
	return portable(b, openTest(b, testOptions(addr, nil), nil)).Slots()
}

func benchAcquire(b *testing.B, addr string) {
	s := benchSlots(b, addr)
	ctx := context.Background()
	opts := store.AcquireOptions{TTL: time.Minute, Preferred: new(7)}
	for range b.N {
		l, err := s.Acquire(ctx, benchNamespace, "bench-owner", opts)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := s.Release(ctx, l); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

func benchRenew(b *testing.B, addr string) {
	s := benchSlots(b, addr)
	ctx := context.Background()
	l, err := s.Acquire(ctx, benchNamespace, "bench-owner", store.AcquireOptions{TTL: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if l, err = s.Renew(ctx, l); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRelease(b *testing.B, addr string) {
	s := benchSlots(b, addr)
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		l, err := s.Acquire(ctx, benchNamespace, "bench-owner", store.AcquireOptions{TTL: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := s.Release(ctx, l); err != nil {
			b.Fatal(err)
		}
	}
}

// benchRawAcquireTrips sends an acquire's requests, in its 3 round trips:
// (1) a .clock write with two reads, (2) two reads, (3) a multi of two
// compare-and-sets.
func benchRawAcquireTrips(b *testing.B, addr string) {
	conn := rawConn(b, addr)
	root := randomRoot()
	clock, slot, index := root+"/clock", root+"/slot", root+"/index"
	data := formatSlot(slotNode{owner: "bench-owner", incarnation: "x", fence: 1, ttl: 60000})
	for _, p := range []string{root, clock, slot, index} {
		if _, err := conn.Create(p, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
			b.Fatal(err)
		}
	}
	parallel := func(fns ...func() error) {
		errs := make(chan error, len(fns))
		for _, fn := range fns {
			go func() { errs <- fn() }()
		}
		for range fns {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
	}
	get := func(p string) func() error { return func() error { _, _, err := conn.Get(p); return err } }
	slotVersion, indexVersion := int32(0), int32(0)
	b.ResetTimer()
	for range b.N {
		parallel(func() error { _, err := conn.Set(clock, nil, -1); return err }, get(root), get(index))
		parallel(get(slot), get(root))
		res, err := conn.Multi(
			&zk.SetDataRequest{Path: slot, Data: data, Version: slotVersion},
			&zk.SetDataRequest{Path: index, Data: []byte("7"), Version: indexVersion})
		if err != nil {
			b.Fatal(err)
		}
		slotVersion, indexVersion = res[0].Stat.Version, res[1].Stat.Version
	}
}

// benchSlotRawCAS is one compare-and-set of a slot-sized node per op.
func benchSlotRawCAS(b *testing.B, addr string) {
	conn := rawConn(b, addr)
	path := randomRoot()
	data := formatSlot(slotNode{owner: "bench-owner", incarnation: "x", fence: 1, ttl: 60000})
	if _, err := conn.Create(path, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		b.Fatal(err)
	}
	version := int32(0)
	b.ResetTimer()
	for range b.N {
		stat, err := conn.Set(path, data, version)
		if err != nil {
			b.Fatal(err)
		}
		version = stat.Version
	}
}
