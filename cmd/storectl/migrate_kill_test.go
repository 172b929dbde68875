package main

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestMigrateKilled: migrate killed (SIGKILL) part-way leaves every key
// either not in the target, or sealed in the source at or below the
// target's value, or (the key in hand: migrate starts it in the target
// before sealing the source, so that a rerun can prove its target) open
// in the source at exactly the target's value, where each store alone
// continues above everything handed out; and a rerun finishes the move:
// every key continues in the target at or above its sealed value.
func TestMigrateKilled(t *testing.T) {
	src, dst := sqlitePair(t)
	const keys = 12
	st := src.open(t)
	for i := range keys {
		next(t, st, fmt.Sprintf("k%02d", i), int64(10*(i+1)))
	}
	st.Close()

	m := startMigrate(t, src, dst, 2*time.Minute, "key k02:")
	if err := m.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	m.cmd.Wait()

	// After the kill: each key open in the source is absent from the
	// target; each key in the target is sealed in the source at or below.
	check := func(after string) (moved int) {
		t.Helper()
		s, d := src.open(t), dst.open(t)
		dstKeys := keysOf(t, d)
		for i := range keys {
			k := fmt.Sprintf("k%02d", i)
			sn, sealed, err := s.Ranges().Current(t.Context(), k)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(dstKeys, k) {
				continue
			}
			moved++
			dn, _, err := d.Ranges().Current(t.Context(), k)
			if err != nil {
				t.Fatal(err)
			}
			if !sealed && dn == sn {
				continue // the key in hand: started in the target, not yet sealed
			}
			if !sealed || dn < sn {
				t.Fatalf("%s: %s is in the target at %d and in the source at %d, sealed %v", after, k, dn, sn, sealed)
			}
		}
		s.Close()
		d.Close()
		return moved
	}
	inHand := func() (n int) {
		t.Helper()
		s, d := src.open(t), dst.open(t)
		defer s.Close()
		defer d.Close()
		for _, k := range keysOf(t, d) {
			if _, sealed, err := s.Ranges().Current(t.Context(), k); err != nil {
				t.Fatal(err)
			} else if !sealed {
				n++
			}
		}
		return n
	}
	if n := inHand(); n > 1 {
		t.Fatalf("after the kill %d keys are in the target and open in the source; only the key in hand may be", n)
	}
	if moved := check("after the kill"); moved == keys {
		t.Logf("every key moved before the kill: the rerun has nothing left to do")
	}
	exe(t, "migrate", "--from", src.spec(), "--to", dst.spec()).want(t, exitOK, fmt.Sprintf("done: %d keys", keys))
	if moved := check("after the rerun"); moved != keys {
		t.Fatalf("after the rerun %d of %d keys are in the target", moved, keys)
	}
	d := dst.open(t)
	for i := range keys {
		k := fmt.Sprintf("k%02d", i)
		if r := next(t, d, k, 1); r.Start < int64(10*(i+1)) {
			t.Fatalf("the target hands out %v of %s, below %d which the source handed out", r, k, 10*(i+1))
		}
	}
}
