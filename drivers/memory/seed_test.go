package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cosid-go/store"
)

// slotInfo returns slot n of ns as Slots lists it.
func slotInfo(t *testing.T, st *store.Store, ns string, n int) store.SlotInfo {
	t.Helper()
	infos, err := st.Slots().List(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if in.Slot == n {
			return in
		}
	}
	t.Fatalf("slot %s/%d is not listed in %+v", ns, n, infos)
	return store.SlotInfo{}
}

func TestSeedNeverUsedSlot(t *testing.T) {
	ctx := t.Context()
	_, sts := openClocked(t, 1000, "a")
	st := sts[0]
	w := ns("workers", 8)
	if err := st.Slots().Seed(ctx, w, 3, 7, 5000); err != nil {
		t.Fatal(err)
	}
	nss, err := st.Slots().Namespaces(ctx)
	if err != nil || len(nss) != 1 || nss[0] != w {
		t.Fatalf("Seed did not create the namespace: %v, %v", nss, err)
	}
	in := slotInfo(t, st, "workers", 3)
	if in.Owner != "" || in.Fence != 7 || in.NextFloor != 5000 {
		t.Fatalf("seeded slot %+v; want released with fence 7 and next floor 5000", in)
	}
	l, err := st.Slots().Acquire(ctx, w, "host", store.AcquireOptions{Preferred: new(3)})
	if err != nil {
		t.Fatal(err)
	}
	if l.Slot != 3 || l.Fence != 8 || l.Floor != 5000 || l.Ceiling < 5000 {
		t.Fatalf("first term after the seed: %+v; want slot 3, fence 8, floor 5000", l)
	}
	// Slots of the namespace not seeded still start from scratch.
	l0, err := st.Slots().Acquire(ctx, w, "other", store.AcquireOptions{Preferred: new(0)})
	if err != nil || l0.Slot != 0 || l0.Fence != 1 || l0.Floor != 0 {
		t.Fatalf("unseeded slot: %+v, %v; want slot 0, fence 1, floor 0", l0, err)
	}
}

func TestSeedNeverLowers(t *testing.T) {
	ctx := t.Context()
	_, sts := openClocked(t, 1000, "a")
	st := sts[0]
	w := ns("workers", 4)
	if err := st.Slots().Seed(ctx, w, 1, 10, 9000); err != nil {
		t.Fatal(err)
	}
	before := slotInfo(t, st, "workers", 1)
	for _, lower := range [][2]int64{{3, 100}, {10, 9000}, {0, 0}} {
		if err := st.Slots().Seed(ctx, w, 1, lower[0], lower[1]); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(before, slotInfo(t, st, "workers", 1)); diff != "" {
		t.Fatalf("seeding lower values changed the slot (-before +after):\n%s", diff)
	}
	// Each value is raised on its own.
	if err := st.Slots().Seed(ctx, w, 1, 12, 100); err != nil {
		t.Fatal(err)
	}
	if in := slotInfo(t, st, "workers", 1); in.Fence != 12 || in.NextFloor != 9000 {
		t.Fatalf("after raising the fence: %+v", in)
	}
	if err := st.Slots().Seed(ctx, w, 1, 5, 9500); err != nil {
		t.Fatal(err)
	}
	if in := slotInfo(t, st, "workers", 1); in.Fence != 12 || in.NextFloor != 9500 {
		t.Fatalf("after raising the floor: %+v", in)
	}
}

func TestSeedReleasedSlot(t *testing.T) {
	ctx := t.Context()
	_, sts := openClocked(t, 1000, "a")
	st := sts[0]
	w := store.Namespace{Name: "workers", Limit: 2, Tolerance: 100 * time.Millisecond}
	l, err := st.Slots().Acquire(ctx, w, "host", store.AcquireOptions{TTL: time.Second, Preferred: new(0)})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Slots().ReleaseUsed(ctx, l, 1500); err != nil {
		t.Fatal(err)
	}
	if err := st.Slots().Seed(ctx, w, 0, 40, 70000); err != nil {
		t.Fatal(err)
	}
	in := slotInfo(t, st, "workers", 0)
	if in.Fence != 40 || in.NextFloor != 70000 || in.LastOwner != "host" {
		t.Fatalf("seeded released slot: %+v", in)
	}
	next, err := st.Slots().Acquire(ctx, w, "host", store.AcquireOptions{TTL: time.Second, Preferred: new(0)})
	if err != nil || next.Slot != 0 || next.Fence != 41 || next.Floor != 70000 {
		t.Fatalf("term after the seed: %+v, %v; want slot 0, fence 41, floor 70000", next, err)
	}
}

func TestSeedLiveTermRefused(t *testing.T) {
	ctx := t.Context()
	clk, sts := openClocked(t, 1000, "a")
	st := sts[0]
	w := store.Namespace{Name: "workers", Limit: 2, Tolerance: 100 * time.Millisecond}
	l, err := st.Slots().Acquire(ctx, w, "host", store.AcquireOptions{TTL: time.Second, Preferred: new(0)})
	if err != nil {
		t.Fatal(err)
	}
	before := slotInfo(t, st, "workers", 0)
	clk.set(l.ExpiresAt - 1)
	err = st.Slots().Seed(ctx, w, 0, 50, 90000)
	wantErr(t, err, store.ErrLocked)
	if diff := cmp.Diff(before, slotInfo(t, st, "workers", 0)); diff != "" {
		t.Fatalf("a refused seed changed the slot (-before +after):\n%s", diff)
	}
	if _, err := st.Slots().Renew(ctx, l); err != nil {
		t.Fatalf("the live term was disturbed: %v", err)
	}
}

func TestSeedExpiredTermEnds(t *testing.T) {
	ctx := t.Context()
	clk, sts := openClocked(t, 1000, "a", "b")
	w := store.Namespace{Name: "workers", Limit: 1, Tolerance: 100 * time.Millisecond}
	l, err := sts[0].Slots().Acquire(ctx, w, "host", store.AcquireOptions{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	clk.set(l.ExpiresAt)
	// The seeded floor lies inside the expired term: a late Renew must not
	// be able to continue that term below it.
	if err := sts[0].Slots().Seed(ctx, w, 0, 1, l.Floor+10); err != nil {
		t.Fatal(err)
	}
	in := slotInfo(t, sts[0], "workers", 0)
	if in.Owner != "" || in.LastOwner != "host" || in.NextFloor < l.Ceiling {
		t.Fatalf("after seeding an expired term: %+v; want it ended with next floor >= %d", in, l.Ceiling)
	}
	_, err = sts[0].Slots().Renew(ctx, l)
	wantErr(t, err, store.ErrLeaseLost)
	next, err := sts[1].Slots().Acquire(ctx, w, "other", store.AcquireOptions{TTL: time.Second})
	if err != nil || next.Fence != l.Fence+1 || next.Floor < l.Ceiling {
		t.Fatalf("next term: %+v, %v; want fence %d and floor >= %d", next, err, l.Fence+1, l.Ceiling)
	}
}

func TestSeedConfigMismatch(t *testing.T) {
	ctx := t.Context()
	st := open(t, uniqueName(t))
	if err := st.Slots().Seed(ctx, ns("workers", 4), 0, 1, 1); err != nil {
		t.Fatal(err)
	}
	err := st.Slots().Seed(ctx, ns("workers", 8), 0, 1, 1)
	wantErr(t, err, store.ErrConfigMismatch)
	err = st.Slots().Seed(ctx, ns("workers", 4), 4, 1, 1)
	wantErr(t, err, store.ErrInvalidArgument)
}

func TestPurge(t *testing.T) {
	ctx := t.Context()
	name := uniqueName(t)
	a, b := open(t, name, store.WithOwner("pa")), open(t, name, store.WithOwner("pb"))
	if _, err := a.Ranges().Next(ctx, "orders", 100); err != nil {
		t.Fatal(err)
	}
	// Not sealed: a seal stops a purge (the TCK's Purge/Seals).
	if _, err := a.Ranges().Next(ctx, "users/eu", 1); err != nil {
		t.Fatal(err)
	}
	w := ns("workers", 4)
	lease, err := a.Slots().Acquire(ctx, w, "host-a", store.AcquireOptions{Preferred: new(0)})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Slots().Seed(ctx, w, 2, 5, 10); err != nil {
		t.Fatal(err)
	}
	held, err := a.Locks().Lock(ctx, "rebalance")
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		l   *store.Lock
		err error
	}
	waited := make(chan result, 1)
	go func() {
		l, err := b.Locks().Lock(context.Background(), "rebalance")
		waited <- result{l, err}
	}()
	eventually(t, "the waiter to queue", func() bool {
		ws, err := a.Locks().Waiters(ctx, "rebalance")
		return err == nil && len(ws) == 2
	})
	// A lock held or waited on: the purge deletes nothing.
	if deleted, err := b.Purge(ctx); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("Purge while a lock is held and waited on: %q, %v; want ErrLocked", deleted, err)
	}
	renewed, err := a.Slots().Renew(ctx, lease)
	if err != nil {
		t.Fatalf("Renew after a refused purge: %v", err)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-waited
	if r.err != nil {
		t.Fatalf("the waiter's Lock once the holder unlocked: %v", r.err)
	}
	if err := r.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// A live lease stops the purge too (see TestPurgeLiveLease).
	if err := a.Slots().ReleaseUsed(ctx, renewed, renewed.Floor); err != nil { // next floor not ahead: see driver.Purger
		t.Fatal(err)
	}

	deleted, err := b.Purge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"range orders",
		"range users/eu",
		"slot workers/0",
		"slot workers/2",
		"owner workers/host-a",
		"namespace workers",
		"lock rebalance",
	}
	if diff := cmp.Diff(want, deleted); diff != "" {
		t.Fatalf("Purge reported (-want +got):\n%s", diff)
	}
	_, err = a.Slots().Renew(ctx, lease)
	wantErr(t, err, store.ErrLeaseLost)

	keys, err := a.Ranges().Keys(ctx)
	if err != nil || len(keys) != 0 {
		t.Fatalf("keys after purge: %v, %v", keys, err)
	}
	nss, err := a.Slots().Namespaces(ctx)
	if err != nil || len(nss) != 0 {
		t.Fatalf("namespaces after purge: %v, %v", nss, err)
	}
	locks, err := a.Locks().List(ctx)
	if err != nil || len(locks) != 0 {
		t.Fatalf("locks after purge: %v, %v", locks, err)
	}
	if r, err := a.Ranges().Next(ctx, "orders", 1); err != nil || r.Start != 0 {
		t.Fatalf("a purged key starts again at 0: %v, %v", r, err)
	}
	// Fences never go back, even across a purge.
	again, err := a.Locks().TryLock(ctx, "rebalance")
	if err != nil {
		t.Fatal(err)
	}
	if again.Fence() <= 2 {
		t.Fatalf("fence after purge %d; want above 2", again.Fence())
	}
	if err := again.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestPurgeEmpty(t *testing.T) {
	deleted, err := open(t, uniqueName(t)).Purge(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{}, deleted, cmpopts.EquateEmpty()); diff != "" {
		t.Fatal(diff)
	}
}
