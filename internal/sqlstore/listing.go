package sqlstore

import (
	"context"
	"fmt"

	"github.com/cosid-go/store/driver"
)

// ListRanges lists one keyset page of keys (driver.RangeLister): an index
// range read above after, so a page costs the same at the first key and
// the last. A key this store saw higher is ErrCorrupt, as for Current;
// a listed key is not remembered, so a listing does not grow the store.
func (s *Store) ListRanges(ctx context.Context, after string, limit int) ([]driver.KeyState, string, error) {
	rows, err := s.db.Query(ctx, s.q.ListRanges, after, limit)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	out := make([]driver.KeyState, 0, limit)
	for rows.Next() {
		var k driver.KeyState
		if err := rows.Scan(&k.Key, &k.Next, &k.Sealed); err != nil {
			return nil, "", err
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	for _, k := range out {
		// Checked, not recorded: a listing must not grow the store's
		// memory of the keys it used by every key it lists.
		if floor := s.seenNext(k.Key); k.Next < floor {
			return nil, "", fmt.Errorf("key %q: next value %d is below %d, seen earlier by this store: the database went back "+
				"(restored from a backup, or a replica promoted without the last commits): %w", k.Key, k.Next, floor, driver.ErrCorrupt)
		}
	}
	return out, driver.NextAfter(out, limit), nil
}
