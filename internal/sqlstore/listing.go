package sqlstore

import (
	"context"

	"github.com/cosid-go/store/driver"
)

// ListRanges lists one keyset page of keys (driver.RangeLister): an index
// range read above after, so a page costs the same at the first key and
// the last. Each key is checked as Current checks it.
func (s *Store) ListRanges(ctx context.Context, after string, limit int) ([]driver.KeyState, error) {
	rows, err := s.db.Query(ctx, s.q.ListRanges, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]driver.KeyState, 0, limit)
	for rows.Next() {
		var k driver.KeyState
		if err := rows.Scan(&k.Key, &k.Next, &k.Sealed); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, k := range out {
		floor := s.seenNext(k.Key)
		s.sawRow(k.Key)
		if err := s.guardNext(k.Key, floor, k.Next); err != nil {
			return nil, err
		}
	}
	return out, nil
}
