package memory

import (
	"context"
	"slices"

	"github.com/cosid-go/store/driver"
)

// ListRanges lists a page of keys with their state (driver.RangeLister).
func (s *driverStore) ListRanges(ctx context.Context, after string, limit int) ([]driver.KeyState, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.st.mu.Unlock()
	keys := pageOf(s.st.ranges, after, limit)
	out := make([]driver.KeyState, len(keys))
	for i, k := range keys {
		r := s.st.ranges[k]
		out[i] = driver.KeyState{Key: k, Next: r.next, Sealed: r.sealed}
	}
	return out, nil
}

// ListLocks lists a page of lock names (driver.LockLister).
func (s *driverStore) ListLocks(ctx context.Context, after string, limit int) ([]string, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.st.mu.Unlock()
	return pageOf(s.st.locks, after, limit), nil
}

// pageOf returns the first limit keys of m above after, sorted. The maps
// are not ordered, so a page looks at every key; it keeps only the page.
func pageOf[V any](m map[string]V, after string, limit int) []string {
	page := make([]string, 0, min(limit, len(m))+1)
	for k := range m {
		if k <= after || (len(page) == limit && k >= page[limit-1]) {
			continue
		}
		i, _ := slices.BinarySearch(page, k)
		page = slices.Insert(page, i, k)
		if len(page) > limit {
			page = page[:limit]
		}
	}
	return page
}
