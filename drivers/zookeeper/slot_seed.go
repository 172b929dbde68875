package zookeeper

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// SeedSlot raises slot n's history for a migration (see driver.SlotSeeder),
// as the memory driver does: a slot never used becomes a released slot with
// the given fence and next floor; an expired term is ended as a takeover
// would end it (its next floor takes in its ceiling); a live term gives
// ErrLocked. Whether a term is live is judged by the mtime of a write of
// the session's clock node, as in an acquire.
func (s *slotStore) SeedSlot(ctx context.Context, ns driver.Namespace, n int, fence, nextFloor int64) error {
	if err := checkPathText("namespace", ns.Name); err != nil {
		return err
	}
	done, err := s.takeSlotTurn(ctx, ns.Name)
	if err != nil {
		return err
	}
	defer done()
	a := attempts{s: s.session}
	now, fenceFloor, _, err := s.clockIn(ctx, ns, "", nil, &a)
	if err != nil {
		return err
	}
	for {
		r, err := s.readSlot(ctx, ns.Name, n, &a)
		if err != nil {
			return err
		}
		if r.bad != nil {
			return r.bad
		}
		rec, changed, err := r.record(fenceFloor).Seeded(fence, nextFloor, now)
		switch {
		case err != nil:
			return fmt.Errorf("zookeeper: %s: %w", r.path, err)
		case !changed:
			return nil
		}
		node := r.node.withRecord(rec)
		data := formatSlot(node)
		op := func() (*zk.Stat, error) {
			// With the slot's marker (slot_made.go).
			res, err := s.conn.Multi(&zk.CreateRequest{Path: r.path, Data: data, Acl: s.acl}, s.madeOp(ns.Name, n))
			if err != nil && len(res) == 2 && res[0].Error == nil {
				err = errMadeFailed{err}
			}
			return nil, err
		}
		if r.exists {
			if err := checkVersion(r.path, r.stat.Version); err != nil {
				return err
			}
			version := r.stat.Version
			op = func() (*zk.Stat, error) { return s.conn.Set(r.path, data, version) }
		}
		_, err = call(ctx, s, op)
		var made errMadeFailed
		switch {
		case err == nil:
			s.marks.saw(r.path, node)
			return nil
		case errors.As(err, &made) && errors.Is(err, zk.ErrNodeExists):
			return s.unmadeErr(ns.Name, n)
		case errors.As(err, &made) && errors.Is(err, zk.ErrNoNode):
			if err := s.createParents(ctx, s.madePath(ns.Name, n), &a); err != nil {
				return err
			}
			continue
		case errors.Is(err, zk.ErrNodeExists), errors.Is(err, zk.ErrBadVersion):
			continue // written meanwhile: judge it again
		case errors.Is(err, zk.ErrNoNode) && !r.exists:
			return fmt.Errorf("zookeeper: %s was deleted during a seed: %w", s.nsPath(ns.Name), driver.ErrNotFound)
		case errors.Is(err, zk.ErrNoNode):
			continue
		case definite(err):
			return fmt.Errorf("zookeeper: seed %s: %w", r.path, err)
		}
		// Seeding only raises values, so after an unknown outcome the next
		// pass either finds them raised or raises them.
		if err := a.retry(ctx, err); err != nil {
			return fmt.Errorf("zookeeper: seed %s: outcome unknown: %w", r.path, err)
		}
	}
}

// errMadeFailed is a seed's create refused for its marker's create.
type errMadeFailed struct{ err error }

func (e errMadeFailed) Error() string { return "slot marker: " + e.err.Error() }
func (e errMadeFailed) Unwrap() error { return e.err }
