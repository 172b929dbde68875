package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store"
)

// TestErrorTexts pins what a user reads for each kind of bad input: what
// was wrong, named once, in the words of the call they made.
func TestErrorTexts(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	ns := store.Namespace{Name: "w", Limit: 4}
	next := func(key string, step int64) func() error {
		return func() error { _, err := st.Ranges().Next(ctx, key, step); return err }
	}
	acquire := func(ns store.Namespace, owner string, o store.AcquireOptions) func() error {
		return func() error { _, err := st.Slots().Acquire(ctx, ns, owner, o); return err }
	}
	lease := store.Lease{Namespace: "w", Slot: 0, Owner: "o", Incarnation: "i", Fence: 1, TTL: time.Second}
	openWith := func(o store.Option) func() error {
		return func() error { _, err := store.OpenDriver(&rangeOnly{}, o); return err }
	}
	long := strings.Repeat("k", store.MaxKeyLen+1)
	for _, tc := range []struct {
		call func() error
		want string
	}{
		{next("a//b", 1), `store: Next: key "a//b" must not contain "//" (an empty segment)`},
		{next("/orders", 1), `store: Next: key "/orders" must not start with '/'`},
		{next("orders/", 1), `store: Next: key "orders/" must not end with '/'`},
		{next("", 1), `store: Next: key is empty`},
		{next("a/../b", 1), `store: Next: key "a/../b" must not have a ".." segment`},
		{next(".", 1), `store: Next: key must not be "."`},
		{next("a\x01", 1), `store: Next: key "a\x01" must not contain the character U+0001`},
		{next("a\xff", 1), `store: Next: key "a\xff" is not valid UTF-8`},
		{next(long, 1), `store: Next: key "kkkkkkkkkkkkkkkkkkkkkkkk"..."kkkkkkkkkkkkkkkkkkkkkkkk" (1025 bytes) is longer than 1024 bytes`},
		// Names that hide: control and format characters, white space only.
		{next("\u202Eorders", 1), `store: Next: key "\u202eorders" must not contain the character U+202E`},
		{next("orders\uFEFF", 1), `store: Next: key "orders\ufeff" must not contain the character U+FEFF`},
		{next("a/b\u200Bc", 1), `store: Next: key "a/b\u200bc" must not contain the character U+200B`},
		{next("a\u00ADb", 1), `store: Next: key "a\u00adb" must not contain the character U+00AD`},
		{next("   ", 1), `store: Next: key "   " must not be only white space`},
		{next("a/ \u00A0/b", 1), `store: Next: key "a/ \u00a0/b" must not have a segment of white space only`},
		{func() error { _, err := st.Locks().TryLock(ctx, " "); return err }, `store: TryLock: lock name " " must not be only white space`},
		{func() error { _, err := st.Locks().TryLock(ctx, "l\u2066"); return err },
			`store: TryLock: lock name "l\u2066" must not contain the character U+2066`},
		{acquire(store.Namespace{Name: "\u3000", Limit: 1}, "o", store.AcquireOptions{}),
			`store: Acquire: namespace "\u3000" must not be only white space`},
		{acquire(ns, "host\u200D", store.AcquireOptions{}),
			`store: Acquire "w": owner "host\u200d" must not contain the character U+200D`},
		{openWith(store.WithOwner("\t")), `store: owner "\t" must not contain the character U+0009`},
		{acquire(ns, "a"+strings.Repeat("é", 20)+"/"+strings.Repeat("é", 20)+"b", store.AcquireOptions{}),
			`store: Acquire "w": owner "aééééééééééé"..."éééééééééééb" (83 bytes) must not contain '/' (it is a single name, not a path)`},
		{next("orders", 0), `store: Next "orders": step 0 is less than 1`},
		{func() error { return st.Ranges().Init(ctx, "k", -1) }, `store: Init "k": next value -1 is negative`},
		{func() error { _, err := st.Ranges().Seal(ctx, "a//b"); return err },
			`store: Seal: key "a//b" must not contain "//" (an empty segment)`},
		{acquire(store.Namespace{Name: "a/b", Limit: 1}, "o", store.AcquireOptions{}),
			`store: Acquire: namespace "a/b" must not contain '/' (it is a single name, not a path)`},
		{acquire(store.Namespace{Name: "w"}, "o", store.AcquireOptions{}),
			`store: Acquire "w": namespace limit 0 is outside [1, 1048576]`},
		{acquire(ns, "a/b", store.AcquireOptions{}),
			`store: Acquire "w": owner "a/b" must not contain '/' (it is a single name, not a path)`},
		{acquire(ns, "o", store.AcquireOptions{TTL: 1500 * time.Microsecond}),
			`store: Acquire "w": ttl 1.5ms must be a whole number of milliseconds`},
		{acquire(ns, "o", store.AcquireOptions{TTL: -time.Second}),
			`store: Acquire "w": ttl -1s is outside [1ms, 24h0m0s]`},
		{acquire(ns, "o", store.AcquireOptions{Preferred: new(4)}),
			`store: Acquire "w": preferred slot 4 is outside [0, 4)`},
		{func() error { return st.Slots().ReleaseUsed(ctx, lease, -1) },
			`store: ReleaseUsed "w/0": used timestamp -1 is negative`},
		{func() error { return st.Slots().Release(ctx, store.Lease{}) }, `store: Release: the lease is the zero Lease, not one that Acquire returned`},
		{func() error { return st.Slots().Release(ctx, store.Lease{Slot: 1, Fence: 1}) }, `store: Release: namespace is empty`},
		{func() error { _, err := st.Locks().TryLock(ctx, "a/b"); return err },
			`store: TryLock: lock name "a/b" must not contain '/' (it is a single name, not a path)`},
		{openWith(store.WithOwner("a/b")), `store: owner "a/b" must not contain '/' (it is a single name, not a path)`},
		{openWith(store.WithTimeout(0)), `store: timeout 0s must be positive`},
		{openWith(store.WithIncarnation("x\ny")), `store: incarnation "x\ny" must not contain the character U+000A`},
		{func() error { _, err := store.OpenDriver(nil); return err }, `store: OpenDriver: the driver store is nil`},
	} {
		err := tc.call()
		if err == nil || err.Error() != tc.want {
			t.Errorf("got  %v\nwant %s", err, tc.want)
		}
		if !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("%v is not ErrInvalidArgument", err)
		}
	}
	// A long key the driver refuses is quoted shortened too.
	mem, err := store.Open("memory", map[string]string{"name": memoryName(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	k := strings.Repeat("x", 500) + strings.Repeat("y", 500)
	if err := mem.Ranges().Init(ctx, k, 5); err != nil {
		t.Fatal(err)
	}
	err = mem.Ranges().Init(ctx, k, 6)
	if err == nil || !strings.HasPrefix(err.Error(), `store: Init "xxxxxxxxxxxxxxxxxxxxxxxx"..."yyyyyyyyyyyyyyyyyyyyyyyy" (1000 bytes): `) ||
		len(err.Error()) > 300 {
		t.Errorf("Init of a long key that exists: %v", err)
	}
}
