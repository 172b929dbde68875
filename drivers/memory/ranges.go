package memory

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/cosid-go/store/driver"
)

// rangeEntry is one range key: the ZooKeeper driver's "1200:sealed" node.
type rangeEntry struct {
	next   int64
	sealed bool
}

// Next reserves [start, start+step) of key; a missing key starts at 0.
func (s *driverStore) Next(ctx context.Context, key string, step int64) (int64, error) {
	if err := driver.CheckStep(step); err != nil {
		return 0, err
	}
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	defer s.st.mu.Unlock()
	r := s.st.ranges[key]
	if r == nil {
		r = &rangeEntry{}
	}
	if r.sealed {
		return 0, fmt.Errorf("sealed at %d: %w", r.next, driver.ErrSealed)
	}
	if r.next > math.MaxInt64-step {
		// Checked before any write, so a refused key is left as it was
		// (and a missing one stays missing).
		return 0, fmt.Errorf("next value %d plus step %d passes %d: %w",
			r.next, step, int64(math.MaxInt64), driver.ErrExhausted)
	}
	start := r.next
	r.next += step
	s.st.ranges[key] = r
	return start, nil
}

// Current returns the next value of key and whether it is sealed.
func (s *driverStore) Current(ctx context.Context, key string) (int64, bool, error) {
	if err := s.begin(ctx); err != nil {
		return 0, false, err
	}
	defer s.st.mu.Unlock()
	if r := s.st.ranges[key]; r != nil {
		return r.next, r.sealed, nil
	}
	return 0, false, nil
}

// Seal marks key sealed (creating it at 0 if missing) and returns its next
// value.
func (s *driverStore) Seal(ctx context.Context, key string) (int64, error) {
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	defer s.st.mu.Unlock()
	r := s.st.ranges[key]
	if r == nil {
		r = &rangeEntry{}
		s.st.ranges[key] = r
	}
	r.sealed = true
	return r.next, nil
}

// Init creates key at next; an existing key must already be at next.
func (s *driverStore) Init(ctx context.Context, key string, next int64) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.st.mu.Unlock()
	if r := s.st.ranges[key]; r != nil {
		if r.next != next {
			return fmt.Errorf("key exists with next value %d, not %d: %w", r.next, next, driver.ErrConfigMismatch)
		}
		return nil
	}
	s.st.ranges[key] = &rangeEntry{next: next}
	return nil
}

// Keys lists every existing key, sorted.
func (s *driverStore) Keys(ctx context.Context) ([]string, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.st.mu.Unlock()
	keys := make([]string, 0, len(s.st.ranges))
	for k := range s.st.ranges {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, nil
}

// Advance raises key's next value to next (driver.RangeAdvancer); a missing
// key is created at next.
func (s *driverStore) Advance(ctx context.Context, key string, next int64) (int64, error) {
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	defer s.st.mu.Unlock()
	r := s.st.ranges[key]
	if r == nil {
		s.st.ranges[key] = &rangeEntry{next: next}
		return 0, nil
	}
	if r.sealed {
		return r.next, fmt.Errorf("sealed at %d: %w", r.next, driver.ErrSealed)
	}
	prev := r.next
	r.next = max(r.next, next)
	return prev, nil
}
