package memory

import (
	"context"
	"maps"
	"slices"

	"github.com/cosid-go/store/driver"
)

// ListRanges lists a page of keys with their state (driver.RangeLister).
func (s *driverStore) ListRanges(ctx context.Context, after string, limit int) ([]driver.KeyState, string, error) {
	if err := s.begin(ctx); err != nil {
		return nil, "", err
	}
	defer s.st.mu.Unlock()
	keys := page(&s.st.rangeIndex, s.st.ranges, s.st.purges, after, limit)
	out := make([]driver.KeyState, len(keys))
	for i, k := range keys {
		r := s.st.ranges[k]
		out[i] = driver.KeyState{Key: k, Next: r.next, Sealed: r.sealed}
	}
	return out, driver.NextAfter(out, limit), nil
}

// ListLocks lists a page of lock names (driver.LockLister).
func (s *driverStore) ListLocks(ctx context.Context, after string, limit int) ([]string, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.st.mu.Unlock()
	return page(&s.st.lockIndex, s.st.locks, s.st.purges, after, limit), nil
}

// sortedKeys is a map's keys, sorted. Keys and lock names are only ever
// added, or all cleared by a purge, so the index is right while the map
// has as many keys as when it was sorted and no purge came between: a
// listing sorts once, not once a page.
type sortedKeys struct {
	n, purges int64
	keys      []string
}

// page returns the first limit keys of m above after, in a new slice.
func page[V any](x *sortedKeys, m map[string]V, purges int64, after string, limit int) []string {
	if x.n != int64(len(m)) || x.purges != purges || x.keys == nil {
		x.keys = slices.Sorted(maps.Keys(m))
		x.n, x.purges = int64(len(m)), purges
	}
	i, found := slices.BinarySearch(x.keys, after)
	if found {
		i++
	}
	return slices.Clone(x.keys[i:min(i+limit, len(x.keys))])
}
