package etcd

import (
	"errors"
	"testing"

	"github.com/cosid-go/store/driver"
)

// TestInitAfterOperatorDelete: a store that handed out values of a key
// which an operator then deleted refuses an Init of it (a program that
// calls Init at every start would otherwise create the key again at its
// first value, and the same store would hand out those values twice).
func TestInitAfterOperatorDelete(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("initdel")
	s := openShifted(t, prefix, 0)
	if err := s.Init(ctx, "k", 100); err != nil {
		t.Fatal(err)
	}
	first, err := s.Next(ctx, "k", 10)
	if err != nil || first != 100 {
		t.Fatalf("Next = %d, %v; want 100", first, err)
	}
	if _, err := rawClient(t).Delete(ctx, prefix+"/range/k"); err != nil {
		t.Fatal(err)
	}
	err = s.Init(ctx, "k", 100)
	if !errors.Is(err, driver.ErrRecreated) {
		t.Errorf("Init of a key this store used, now deleted: %v; want ErrRecreated", err)
	}
	if again, err := s.Next(ctx, "k", 10); err == nil {
		t.Errorf("Next after the Init handed out %d again (first was %d)", again, first)
	}
	resp, err := rawClient(t).Get(ctx, prefix+"/range/k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 {
		t.Errorf("the refused Init created the key again: %q", resp.Kvs[0].Value)
	}
}
