package idgen_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/idgen"
)

func newSnowflake(t *testing.T, st *store.Store, ns store.Namespace, owner string, opts idgen.SnowflakeOptions) *idgen.Snowflake {
	t.Helper()
	g, err := idgen.NewSnowflake(t.Context(), st, ns, owner, opts)
	return closedAtEnd(t, g, err)
}

// issue calls NextID n times, failing the test on an error.
func issue(t *testing.T, g *idgen.Snowflake, n int) []int64 {
	t.Helper()
	out := make([]int64, 0, n)
	for range n {
		id, err := g.NextID(t.Context())
		if err != nil {
			t.Fatalf("NextID after %d IDs: %v", len(out), err)
		}
		out = append(out, id)
	}
	return out
}

// span returns the store milliseconds [from, to) of an ID's timestamp unit.
func span(g *idgen.Snowflake, id int64) (from, to int64) {
	l := g.Layout()
	ts, _, _ := l.Decode(id)
	from = l.Time(ts).UnixMilli()
	return from, from + l.Unit.Milliseconds()
}

// within checks that every ID has g's worker and a unit inside [floor, ceiling).
func within(t *testing.T, g *idgen.Snowflake, ids []int64, floor, ceiling int64) {
	t.Helper()
	for _, id := range ids {
		from, to := span(g, id)
		if _, w, _ := g.Layout().Decode(id); w != g.Worker() {
			t.Fatalf("ID %d has worker %d, want %d", id, w, g.Worker())
		}
		if from < floor || to > ceiling {
			t.Fatalf("ID %d covers [%d, %d) ms, outside the lease's [%d, %d)", id, from, to, floor, ceiling)
		}
	}
}

// slotInfo returns what the store lists for one slot.
func slotInfo(t *testing.T, st *store.Store, ns string, slot int) store.SlotInfo {
	t.Helper()
	slots, err := st.Slots().List(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		if s.Slot == slot {
			return s
		}
	}
	t.Fatalf("slot %d of %q is not listed", slot, ns)
	return store.SlotInfo{}
}

func maxOf(ids []int64) int64 {
	m := ids[0]
	for _, v := range ids {
		m = max(m, v)
	}
	return m
}

func TestSnowflakeNoDuplicates(t *testing.T) { testSnowflakeNoDuplicates(t, memoryBackend(t)) }

// testSnowflakeNoDuplicates runs generators x goroutines on several stores.
func testSnowflakeNoDuplicates(t *testing.T, b backend) {
	const stores, gens, workers, each = 3, 3, 4, 2000
	space := store.Namespace{Name: "dup", Limit: 16, Tolerance: time.Second}
	var all collector
	var wg sync.WaitGroup
	seen := map[int]bool{}
	for s := range stores {
		st, _ := open(t, b)
		for n := range gens {
			g := newSnowflake(t, st, space, "host-"+string(rune('a'+s))+string(rune('0'+n)), idgen.SnowflakeOptions{})
			if seen[g.Worker()] {
				t.Fatalf("worker %d handed to two generators", g.Worker())
			}
			seen[g.Worker()] = true
			for range workers {
				wg.Go(func() {
					ids := takeInOrder(t, g, each)
					lease := g.Session().Lease()
					within(t, g, ids, lease.Floor, lease.Ceiling)
					all.add(ids...)
				})
			}
		}
	}
	wg.Wait()
	all.wantUnique(t, "snowflake IDs", stores*gens*workers*each)
}

func TestSnowflakePausedHolder(t *testing.T) { testSnowflakePausedHolder(t, memoryBackend(t)) }

// testSnowflakePausedHolder: a holder whose renewals hang past its ttl
// stops by itself; another process takes the slot; the old holder refuses
// to issue when it goes on, and the two never share an ID.
func testSnowflakePausedHolder(t *testing.T, b backend) {
	one := store.Namespace{Name: "one", Limit: 1, Tolerance: 100 * time.Millisecond} // a single slot both want
	stA, fA := open(t, b)
	stB, _ := open(t, b)
	// A ttl the acquire cannot use up under load (a lease over on arrival
	// fails NewSnowflake), yet short enough to wait out.
	a := newSnowflake(t, stA, one, "host-a", idgen.SnowflakeOptions{Acquire: store.AcquireOptions{TTL: 2 * time.Second}})
	idsA := issue(t, a, 100)

	release := fA.renew.hold(0)
	defer release()
	var err error
	for { // A keeps issuing until it refuses on its own
		var id int64
		if id, err = a.NextID(t.Context()); err != nil {
			break
		}
		idsA = append(idsA, id)
	}
	if !errors.Is(err, idgen.ErrLeaseLost) || !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("A after its renewals hung: %v, want ErrLeaseLost", err)
	}
	leaseA := a.Session().Lease()
	within(t, a, idsA, leaseA.Floor, leaseA.Ceiling)
	t.Logf("A issued %d IDs, then refused: %v", len(idsA), err)

	waitUntil(leaseA.ExpiresAt) // the store now lets another process take the slot
	bg := newSnowflake(t, stB, one, "host-b", idgen.SnowflakeOptions{})
	leaseB := bg.Session().Lease()
	if leaseB.Slot != leaseA.Slot || leaseB.Floor < leaseA.Ceiling {
		t.Fatalf("B got slot %d floor %d, want slot %d with floor >= A's ceiling %d", leaseB.Slot, leaseB.Floor, leaseA.Slot, leaseA.Ceiling)
	}
	idsB := issue(t, bg, 1000)
	within(t, bg, idsB, leaseB.Floor, leaseB.Ceiling)

	// A wakes up: it must refuse, now and after its hung renewal returns.
	if id, err := a.NextID(t.Context()); !errors.Is(err, idgen.ErrLeaseLost) {
		t.Fatalf("paused A after B took the slot: ID %d, error %v; want ErrLeaseLost", id, err)
	}
	release()
	if id, err := a.NextID(t.Context()); !errors.Is(err, idgen.ErrLeaseLost) {
		t.Fatalf("A after its renewal returned: ID %d, error %v; want ErrLeaseLost", id, err)
	}
	if err := a.Close(t.Context()); err != nil {
		t.Fatalf("closing A: %v (its slot is B's now: nothing to release)", err)
	}
	unique(t, "IDs of A and B", append(idsA, idsB...))
	if _, err := bg.NextID(t.Context()); err != nil {
		t.Fatalf("B after A closed: %v", err)
	}
}

func TestSnowflakeClockSteps(t *testing.T) {
	st, _ := open(t, memoryBackend(t))
	t0 := time.Now().UnixMilli()

	t.Run("BackwardsWithinBound", func(t *testing.T) {
		clk := newFakeClock(t0)
		// MaxWait far above how long the test takes to move the clock on.
		g := newSnowflake(t, st, ns, "back", idgen.SnowflakeOptions{Clock: clk.Now, MaxAhead: -1, MaxWait: 10 * time.Second})
		ids := issue(t, g, 5)
		clk.set(t0 - 5)
		reads := clk.readsSoFar()
		got := make(chan int64, 1)
		go func() {
			id, err := g.NextID(t.Context())
			if err != nil {
				t.Errorf("NextID while the clock catches up: %v", err)
			}
			got <- id
		}()
		clk.waitReads(t, reads+2) // it read the clock and is waiting for it
		clk.set(t0 + 1)
		id := <-got
		if from, _ := span(g, id); from != t0+1 {
			t.Fatalf("after the clock caught up: timestamp %d ms, want %d", from, t0+1)
		}
		ids = append(ids, id)
		increasing(t, "IDs across the step", ids)

		// Far behind: a wait longer than MaxWait fails at once.
		clk.set(t0 - 10_000)
		start := time.Now()
		if _, err := g.NextID(t.Context()); !errors.Is(err, idgen.ErrClockBackwards) {
			t.Fatalf("clock 10s behind: %v, want ErrClockBackwards", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("a wait known to be too long took %v before failing, with MaxWait 10s", d)
		}
		clk.set(t0 + 2)
		ids = append(ids, issue(t, g, 5)...)
		increasing(t, "IDs after the clock recovered", ids)
	})

	t.Run("BackwardsPastBound", func(t *testing.T) {
		// A clock that stays behind fails when the bound is over.
		const maxWait = 300 * time.Millisecond
		clk := newFakeClock(t0)
		own := store.Namespace{Name: "stuck", Limit: 1, Tolerance: ns.Tolerance} // a fresh slot: floor 0
		g := newSnowflake(t, st, own, "stuck", idgen.SnowflakeOptions{Clock: clk.Now, MaxAhead: -1, MaxWait: maxWait})
		issue(t, g, 5)
		clk.set(t0 - 100)
		start := time.Now()
		if _, err := g.NextID(t.Context()); !errors.Is(err, idgen.ErrClockBackwards) {
			t.Fatalf("clock stuck 100ms behind: %v, want ErrClockBackwards", err)
		}
		if d := time.Since(start); d > maxWait+5*time.Second {
			t.Errorf("NextID waited %v with MaxWait %v", d, maxWait)
		}
	})

	t.Run("SmallStepRunsAhead", func(t *testing.T) {
		clk := newFakeClock(t0)
		g := newSnowflake(t, st, ns, "ahead", idgen.SnowflakeOptions{Clock: clk.Now, MaxAhead: 50 * time.Millisecond, MaxWait: -1})
		ids := issue(t, g, 5)
		clk.set(t0 - 20)
		reads := clk.readsSoFar()
		ids = append(ids, issue(t, g, 5)...) // no wait, even with MaxWait negative
		if n := clk.readsSoFar() - reads; n != 5 {
			t.Errorf("5 IDs read the clock %d times: they waited", n)
		}
		increasing(t, "IDs across a small step back", ids)
		clk.set(t0 - 100) // beyond MaxAhead, and no waiting allowed
		if _, err := g.NextID(t.Context()); !errors.Is(err, idgen.ErrClockBackwards) {
			t.Fatalf("clock 100ms behind with MaxAhead 50ms: %v", err)
		}
	})

	t.Run("Forward", func(t *testing.T) {
		clk := newFakeClock(t0)
		g := newSnowflake(t, st, ns, "forward", idgen.SnowflakeOptions{Clock: clk.Now, MaxWait: 200 * time.Millisecond})
		ids := issue(t, g, 5)
		clk.add(5 * time.Second)
		ids = append(ids, issue(t, g, 5)...)
		if from, _ := span(g, ids[len(ids)-1]); from != t0+5000 {
			t.Fatalf("after a jump of 5s: timestamp %d ms, want %d", from, t0+5000)
		}
		clk.add(-3 * time.Second) // back again, beyond MaxAhead (1s)
		if _, err := g.NextID(t.Context()); !errors.Is(err, idgen.ErrClockBackwards) {
			t.Fatalf("clock 3s behind the last timestamp: %v", err)
		}
		clk.add(3 * time.Second)
		ids = append(ids, issue(t, g, 5)...)
		increasing(t, "IDs across the jumps", ids)
		lease := g.Session().Lease()
		within(t, g, ids, lease.Floor, lease.Ceiling)

		// A jump past the lease's expiry: no ID at or past the ceiling.
		clk.set(lease.ExpiresAt)
		if id, err := g.NextID(t.Context()); !errors.Is(err, idgen.ErrLeaseLost) {
			t.Fatalf("clock at the lease's expiry: ID %d, error %v; want ErrLeaseLost", id, err)
		}
	})
}

func TestSnowflakeCeiling(t *testing.T) {
	st, _ := open(t, memoryBackend(t))
	tight := store.Namespace{Name: "tight", Limit: 2, Tolerance: 0} // ceiling = expiry
	t0 := time.Now().UnixMilli()
	clk := newFakeClock(t0) // frozen: every new unit is a step ahead of it
	g := newSnowflake(t, st, tight, "host-a", idgen.SnowflakeOptions{
		Layout:   idgen.Layout{SequenceBits: 1},
		Acquire:  store.AcquireOptions{TTL: 3 * time.Second}, // renewals with 2.7s to spare
		Clock:    clk.Now,
		MaxAhead: time.Hour,
		MaxWait:  20 * time.Millisecond,
	})
	first := g.Session().Lease()
	var ids []int64
	var err error
	for {
		var id int64
		if id, err = g.NextID(t.Context()); err != nil {
			break
		}
		ids = append(ids, id)
	}
	if !errors.Is(err, idgen.ErrCeiling) {
		t.Fatalf("running ahead: %v, want ErrCeiling", err)
	}
	lease := g.Session().Lease()
	within(t, g, ids, lease.Floor, lease.Ceiling)
	// Ceilings only rise (a renewal may have come meanwhile): it went at
	// least up to the first one.
	if _, last := span(g, maxOf(ids)); last < first.Ceiling {
		t.Errorf("stopped at %d ms, below the first ceiling %d", last, first.Ceiling)
	}
	// A renewal raises the ceiling, and issuing goes on below it.
	eventually(t, "a renewal", func() bool { return g.Session().Lease().Ceiling > lease.Ceiling })
	id, err := g.NextID(t.Context())
	if err != nil {
		t.Fatalf("after the ceiling rose: %v", err)
	}
	lease = g.Session().Lease()
	within(t, g, []int64{id}, lease.Floor, lease.Ceiling)
	unique(t, "IDs up to the ceiling", append(ids, id))
}

func TestSnowflakeRestart(t *testing.T) { testSnowflakeRestart(t, memoryBackend(t)) }

// testSnowflakeRestart: a restarted owner gets its slot back and issues
// above everything its previous run issued.
func testSnowflakeRestart(t *testing.T, b backend) {
	t.Run("AfterClose", func(t *testing.T) {
		space := store.Namespace{Name: "clean", Limit: 8, Tolerance: time.Second}
		stA, _ := open(t, b)
		a := newSnowflake(t, stA, space, "host-a", idgen.SnowflakeOptions{})
		idsA := issue(t, a, 500)
		old := a.Session().Lease()
		if err := a.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		_, usedTo := span(a, maxOf(idsA))
		if s := slotInfo(t, stA, space.Name, old.Slot); s.Owner != "" || s.NextFloor != usedTo {
			t.Fatalf("after Close: slot %+v, want released with next floor %d (right above the last unit used)", s, usedTo)
		}

		stB, _ := open(t, b) // the same owner, restarted
		bg := newSnowflake(t, stB, space, "host-a", idgen.SnowflakeOptions{})
		l := bg.Session().Lease()
		if l.Slot != old.Slot || l.Floor < old.Floor || l.Floor != usedTo {
			t.Fatalf("restart got slot %d floor %d, want slot %d floor %d", l.Slot, l.Floor, old.Slot, usedTo)
		}
		idsB := issue(t, bg, 500)
		if idsB[0] <= maxOf(idsA) {
			t.Fatalf("restarted run issued %d, not above the old run's %d", idsB[0], maxOf(idsA))
		}
	})

	t.Run("AfterCrash", func(t *testing.T) {
		space := store.Namespace{Name: "crash", Limit: 1, Tolerance: 50 * time.Millisecond}
		stA, _ := open(t, b)
		// A ttl the acquire cannot use up under load; the restart waits
		// it out below.
		a := newSnowflake(t, stA, space, "host-a", idgen.SnowflakeOptions{Acquire: store.AcquireOptions{TTL: 2 * time.Second}})
		idsA := issue(t, a, 500)
		old := a.Session().Lease()
		stA.Close() // a crash: the lease is not released

		stB, _ := open(t, b)
		bg := newSnowflake(t, stB, space, "host-a", idgen.SnowflakeOptions{
			Acquire:  store.AcquireOptions{TTL: 10 * time.Second, Reclaim: true},
			MaxAhead: -1,               // wait for the clock to reach the floor
			MaxWait:  20 * time.Second, // far more than the old ttl + tolerance
		})
		l := bg.Session().Lease()
		if l.Slot != old.Slot || l.Fence != old.Fence+1 || l.Floor < old.Ceiling {
			t.Fatalf("reclaim got slot %d fence %d floor %d, want slot %d fence %d floor >= %d",
				l.Slot, l.Fence, l.Floor, old.Slot, old.Fence+1, old.Ceiling)
		}
		idsB := issue(t, bg, 100) // waits until the clock reaches the floor
		if now := time.Now().UnixMilli(); now < l.Floor {
			t.Errorf("issued at %d ms, before the clock reached the floor %d", now, l.Floor)
		}
		within(t, bg, idsB, l.Floor, bg.Session().Lease().Ceiling)
		if idsB[0] <= maxOf(idsA) {
			t.Fatalf("restarted run issued %d, not above the old run's %d", idsB[0], maxOf(idsA))
		}
	})
}

func TestSnowflakeClose(t *testing.T) {
	st, _ := open(t, memoryBackend(t))
	t0 := time.Now().UnixMilli()
	clk := newFakeClock(t0)
	g, err := idgen.NewSnowflake(t.Context(), st, ns, "host-a", idgen.SnowflakeOptions{Clock: clk.Now, MaxAhead: -1, MaxWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	issue(t, g, 3)
	clk.set(t0 - 1000) // NextID will wait up to a second for the clock
	reads := clk.readsSoFar()
	waiting := make(chan error, 1)
	go func() {
		_, err := g.NextID(t.Context())
		waiting <- err
	}()
	clk.waitReads(t, reads+2)
	if err := g.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-waiting; !errors.Is(err, idgen.ErrClosed) {
		t.Fatalf("a waiting NextID after Close: %v, want ErrClosed", err)
	}
	if _, err := g.NextID(t.Context()); !errors.Is(err, idgen.ErrClosed) {
		t.Fatalf("NextID after Close: %v, want ErrClosed", err)
	}
	if err := g.Close(t.Context()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := g.Session().Err(); !errors.Is(err, idgen.ErrClosed) {
		t.Fatalf("session after Close: %v", err)
	}

	// A generator that issued nothing leaves the floor where it was.
	n, err := idgen.NewSnowflake(t.Context(), st, ns, "host-b", idgen.SnowflakeOptions{Acquire: store.AcquireOptions{Preferred: new(g.Worker())}})
	if err != nil {
		t.Fatal(err)
	}
	floor := n.Session().Lease().Floor
	if floor == 0 {
		t.Fatalf("host-b got slot %d with floor 0; the test needs the slot host-a released", n.Worker())
	}
	if err := n.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s := slotInfo(t, st, ns.Name, n.Worker()); s.NextFloor != floor {
		t.Fatalf("unused slot released with next floor %d, want its floor %d", s.NextFloor, floor)
	}
}

func TestSnowflakeOptions(t *testing.T) {
	st, _ := open(t, memoryBackend(t))
	big := store.Namespace{Name: "big", Limit: 2000, Tolerance: time.Second}
	for _, tc := range []struct {
		ns   store.Namespace
		opts idgen.SnowflakeOptions
	}{
		{big, idgen.SnowflakeOptions{Layout: idgen.Layout{WorkerBits: 10}}},
		{ns, idgen.SnowflakeOptions{Layout: idgen.Layout{TimestampBits: 50, SequenceBits: 12}}},
		{ns, idgen.SnowflakeOptions{Layout: idgen.Layout{Unit: 10 * time.Millisecond}, MaxWait: 5 * time.Millisecond}},
		{ns, idgen.SnowflakeOptions{Acquire: store.AcquireOptions{TTL: -time.Second}}},
		{ns, idgen.SnowflakeOptions{Layout: idgen.Layout{Epoch: time.Now().Add(time.Hour)}}},
	} {
		if _, err := idgen.NewSnowflake(t.Context(), st, tc.ns, "host-a", tc.opts); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("NewSnowflake(%v, %+v): %v, want ErrInvalidArgument", tc.ns, tc.opts, err)
		}
	}
	// A layout refused before any store call: the namespace was not created.
	if _, err := st.Slots().List(t.Context(), big.Name); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("namespace after a refused layout: %v, want ErrNotFound", err)
	}

	newSnowflake(t, st, ns, "host-a", idgen.SnowflakeOptions{})
	if _, err := idgen.NewSnowflake(t.Context(), st, ns, "host-a", idgen.SnowflakeOptions{}); !errors.Is(err, idgen.ErrInUse) {
		t.Errorf("two generators of one owner on one store: %v, want ErrInUse", err)
	}
}

// TestSnowflakeWaitsForFloor: a lease whose floor (left by the slot's
// previous term) is far ahead of the clock makes NextID wait for it, up to
// MaxWait and the caller's context, rather than fail at once.
func TestSnowflakeWaitsForFloor(t *testing.T) {
	st, _ := open(t, memoryBackend(t))
	space := store.Namespace{Name: "floor", Limit: 2, Tolerance: 50 * time.Millisecond}
	for _, owner := range []string{"old-0", "old-1"} { // each leaves its slot a floor of about now
		g := newSnowflake(t, st, space, owner, idgen.SnowflakeOptions{})
		issue(t, g, 10)
		if err := g.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	// The clocks of the new generators are a minute behind those floors.
	behind := time.Now().Add(-time.Minute).UnixMilli()

	t.Run("UpToMaxWait", func(t *testing.T) {
		const maxWait = 300 * time.Millisecond
		g := newSnowflake(t, st, space, "short", idgen.SnowflakeOptions{Clock: newFakeClock(behind).Now, MaxAhead: -1, MaxWait: maxWait})
		start := time.Now()
		_, err := g.NextID(t.Context())
		if !errors.Is(err, idgen.ErrClockBackwards) || !strings.Contains(err.Error(), "previous term") {
			t.Fatalf("NextID a minute below the floor: %v; want ErrClockBackwards naming the slot's previous term", err)
		}
		if d := time.Since(start); d < maxWait {
			t.Fatalf("NextID failed after %v, without waiting MaxWait %v for the floor", d, maxWait)
		}
		t.Log(err)
	})

	t.Run("UntilTheFloor", func(t *testing.T) {
		clk := newFakeClock(behind)
		g := newSnowflake(t, st, space, "long", idgen.SnowflakeOptions{Clock: clk.Now, MaxAhead: -1, MaxWait: time.Minute})
		floor := g.Session().Lease().Floor

		// The caller's context bounds the wait too, and its error says why.
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		if _, err := g.NextID(ctx); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "previous term") {
			t.Fatalf("NextID with a context shorter than the wait: %v; want DeadlineExceeded naming the slot's previous term", err)
		}

		reads := clk.readsSoFar()
		got := make(chan error, 1)
		var id int64
		go func() {
			var err error
			id, err = g.NextID(t.Context())
			got <- err
		}()
		clk.waitReads(t, reads+2) // it read the clock and is waiting for it
		clk.set(floor)
		if err := <-got; err != nil {
			t.Fatalf("NextID once the clock reached the floor: %v", err)
		}
		if from, _ := span(g, id); from != floor {
			t.Fatalf("first ID at %d ms, want the floor %d", from, floor)
		}
	})
}

// TestSnowflakeStopsOnSeal: once a migration seals the namespace, the
// generator's next renewal is refused (ErrSealed) and its session ends at
// once rather than retry: NextID fails, no ID passes the ceiling that a
// reader of the slots saw after the seal, and Close still releases the slot.
func TestSnowflakeStopsOnSeal(t *testing.T) {
	st, _ := open(t, memoryBackend(t))
	g := newSnowflake(t, st, ns, "host-a", idgen.SnowflakeOptions{Acquire: store.AcquireOptions{TTL: 3 * time.Second}})
	floor := g.Session().Lease().Floor
	ids := issue(t, g, 10)
	if err := st.Slots().Seal(t.Context(), ns.Name); err != nil {
		t.Fatal(err)
	}
	read := slotInfo(t, st, ns.Name, g.Worker()) // what a migration reads
	ended(t, g.Session())
	if err := g.Session().Err(); !errors.Is(err, idgen.ErrLeaseLost) || !errors.Is(err, store.ErrSealed) {
		t.Fatalf("session after the seal: %v, want ErrLeaseLost caused by ErrSealed", err)
	}
	if _, err := g.NextID(t.Context()); !errors.Is(err, idgen.ErrLeaseLost) {
		t.Fatalf("NextID after the seal ended the session: %v, want ErrLeaseLost", err)
	}
	within(t, g, ids, floor, read.Ceiling)
	if after := slotInfo(t, st, ns.Name, g.Worker()); after.Ceiling != read.Ceiling {
		t.Fatalf("the slot's ceiling moved from %d to %d after the seal", read.Ceiling, after.Ceiling)
	}
	if err := g.Close(t.Context()); err != nil {
		t.Fatalf("Close after the seal: %v", err)
	}
	if after := slotInfo(t, st, ns.Name, g.Worker()); after.Owner != "" || after.NextFloor > read.Ceiling {
		t.Fatalf("slot after Close: owner %q, next floor %d; want released, at most the ceiling %d", after.Owner, after.NextFloor, read.Ceiling)
	}
}

// TestSnowflakeIssuesBelowSealedCeiling: a generator that keeps issuing
// after the seal, as fast as it can, until its session ends: every ID it
// issued after the seal lies below the ceiling a reader of the slots saw
// after the seal (what a migration seeds the target above), and it stops
// with ErrLeaseLost or ErrCeiling, never past that ceiling.
func TestSnowflakeIssuesBelowSealedCeiling(t *testing.T) {
	testSnowflakeIssuesBelowSealedCeiling(t, memoryBackend(t))
}

func testSnowflakeIssuesBelowSealedCeiling(t *testing.T, b backend) {
	st, _ := open(t, b)
	g := newSnowflake(t, st, ns, "host-a", idgen.SnowflakeOptions{Acquire: store.AcquireOptions{TTL: 3 * time.Second}})
	floor := g.Session().Lease().Floor
	issue(t, g, 10)
	if err := st.Slots().Seal(t.Context(), ns.Name); err != nil {
		t.Fatal(err)
	}
	read := slotInfo(t, st, ns.Name, g.Worker())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var after []int64
	var err error
	for {
		var id int64
		if id, err = g.NextID(ctx); err != nil {
			break
		}
		after = append(after, id)
	}
	if !errors.Is(err, idgen.ErrLeaseLost) && !errors.Is(err, idgen.ErrCeiling) {
		t.Fatalf("NextID after %d IDs past the seal: %v, want ErrLeaseLost or ErrCeiling", len(after), err)
	}
	within(t, g, after, floor, read.Ceiling)
	t.Logf("%d IDs issued after the seal, all below the ceiling %d the read saw; then %v", len(after), read.Ceiling, err)
}
