package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

var _ driver.RangeStore = (*rangeStore)(nil)

// rangeStore is the store's driver.RangeStore: one node per key under
// {root}/range, written by compare-and-set (range_codec.go holds its
// data, range_list.go lists the keys).
type rangeStore struct {
	*session

	keysMu sync.Mutex
	keys   map[string]*rangeKey

	kidsMu sync.Mutex
	kids   *childList // range_page.go
}

// rangeKey is what the store knows of one key's node. Its semaphore
// serializes the store's own operations on the key, so that goroutines of
// one process take turns instead of defeating each other's compare-and-set.
type rangeKey struct {
	sem chan struct{}

	// seen: the store has used the node, whose creation zxid is czxid. A
	// later node under the same path is another node, never adopted.
	seen  bool
	czxid int64

	// high and highSealed: the highest next value the store has seen the
	// node hold (read or written) and whether it saw it sealed. Values only
	// go up and a seal is never lifted, so a node read below them went
	// back (written back from a copy, a restored backup) and is refused
	// (ErrCorrupt): its values were handed out already.
	high       int64
	highSealed bool

	// cached: version, next and sealed are the node's state as of the
	// store's last write or read of it, so Next can compare-and-set on
	// version without reading first.
	cached  bool
	version int32
	next    int64
	sealed  bool
}

// rangeNode is a range node as read.
type rangeNode struct {
	exists bool
	empty  bool // a parent node with no data: the key has no value yet
	next   int64
	sealed bool
	stat   zk.Stat
}

func (s *rangeStore) rangePath(key string) string { return s.root + "/range/" + key }

// lockKey takes the store's turn on key.
func (s *rangeStore) lockKey(ctx context.Context, key string) (*rangeKey, func(), error) {
	if err := checkPathText("key", key); err != nil {
		return nil, nil, err
	}
	s.keysMu.Lock()
	k := s.keys[key]
	if k == nil {
		k = &rangeKey{sem: make(chan struct{}, 1)}
		s.keys[key] = k
	}
	s.keysMu.Unlock()
	select {
	case k.sem <- struct{}{}:
		return k, func() { <-k.sem }, nil
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	case <-s.closing:
		return nil, nil, driver.ErrClosed
	}
}

// Next reserves [start, start+step) of key. In steady state it is one
// compare-and-set on the version the store last wrote.
func (s *rangeStore) Next(ctx context.Context, key string, step int64) (int64, error) {
	if err := driver.CheckStep(step); err != nil {
		return 0, err
	}
	k, unlock, err := s.lockKey(ctx, key)
	if err != nil {
		return 0, err
	}
	defer unlock()
	path := s.rangePath(key)
	a := attempts{s: s.session}
	read := false // k's cached state was read by this call
	for {
		if !k.cached {
			n, err := s.readKnown(ctx, k, path, &a)
			if err != nil {
				return 0, err
			}
			if !n.exists {
				// The first range of a new key is [0, step): the node is
				// created holding step.
				stat, err := s.createRange(ctx, path, formatRange(step, false), &a)
				if a.unknown != nil {
					s.report(driver.Event{Kind: driver.UnknownOutcome, Key: key, Value: 0, Count: step, Err: a.unknown})
					a.unknown = nil
				}
				if err != nil {
					return 0, err
				}
				if stat != nil {
					k.wrote(stat, step, false)
					return 0, nil
				}
				continue // lost the race, or outcome unknown: read again
			}
			read = true
		}
		if k.sealed || k.next > math.MaxInt64-step {
			if !read {
				// The cached state may be stale: confirm before refusing.
				k.cached = false
				continue
			}
			if k.sealed {
				return 0, fmt.Errorf("zookeeper: %s: sealed at %d: %w", path, k.next, driver.ErrSealed)
			}
			return 0, fmt.Errorf("zookeeper: %s: next value %d plus step %d passes %d: %w",
				path, k.next, step, int64(math.MaxInt64), driver.ErrExhausted)
		}
		start, version := k.next, k.version
		if err := checkVersion(path, version); err != nil {
			return 0, err
		}
		data := formatRange(start+step, false)
		stat, err := call(ctx, s, func() (*zk.Stat, error) { return s.conn.Set(path, data, version) })
		switch {
		case err == nil:
			if err := k.check(path, stat); err != nil {
				return 0, err
			}
			k.wrote(stat, start+step, false)
			return start, nil
		case errors.Is(err, zk.ErrBadVersion):
			k.cached = false // another writer went first: read and retry
		case errors.Is(err, zk.ErrNoNode):
			k.cached = false
			return 0, fmt.Errorf("zookeeper: %s was deleted while in use: %w", path, driver.ErrRecreated)
		default:
			// The write may have happened. It is not counted as ours: its
			// range is skipped, and the next try starts from a fresh read.
			k.cached = false
			s.report(driver.Event{Kind: driver.UnknownOutcome, Key: key, Value: start, Count: step, Err: err})
			if err := a.retry(ctx, err); err != nil {
				return 0, fmt.Errorf("zookeeper: write %s: %w", path, err)
			}
		}
	}
}

// Current reads key's next value and whether it is sealed.
func (s *rangeStore) Current(ctx context.Context, key string) (int64, bool, error) {
	k, unlock, err := s.lockKey(ctx, key)
	if err != nil {
		return 0, false, err
	}
	defer unlock()
	path := s.rangePath(key)
	a := attempts{s: s.session}
	// A plain read answers from the connected server, which may lag the
	// leader: sync first, so Current is never below a range already handed
	// out by any store.
	if err := s.sync(ctx, path, &a); err != nil {
		return 0, false, err
	}
	n, err := s.readRange(ctx, path, &a)
	if err != nil {
		return 0, false, err
	}
	if k.seen {
		// Report a node the store used and that is gone or replaced as
		// such, not as a fresh key at 0.
		if err := k.adopt(path, n); err != nil {
			return 0, false, err
		}
	}
	return n.next, n.sealed, nil
}

// Seal marks key sealed and returns its final next value; a missing key is
// created sealed at 0.
func (s *rangeStore) Seal(ctx context.Context, key string) (int64, error) {
	return s.rewrite(ctx, key, func(n rangeNode) (int64, bool, bool, error) {
		return n.next, true, !n.sealed, nil
	})
}

// rewrite is Seal's and Advance's loop: under key's lock it reads the
// node, asks decide what to write on what it read, and creates the node
// with that or writes it on the version read. A concurrent write or an
// unknown outcome is read again. It returns the next value read (0 for a
// node it created), with decide's error if any.
func (s *rangeStore) rewrite(ctx context.Context, key string,
	decide func(n rangeNode) (next int64, sealed, write bool, err error)) (int64, error) {
	k, unlock, err := s.lockKey(ctx, key)
	if err != nil {
		return 0, err
	}
	defer unlock()
	path := s.rangePath(key)
	a := attempts{s: s.session}
	for {
		n, err := s.readKnown(ctx, k, path, &a)
		if err != nil {
			return 0, err
		}
		next, sealed, write, err := decide(n)
		if err != nil || !write {
			return n.next, err
		}
		if !n.exists {
			stat, err := s.createRange(ctx, path, formatRange(next, sealed), &a)
			if err != nil {
				return 0, err
			}
			if stat != nil {
				k.wrote(stat, next, sealed)
				return 0, nil
			}
			continue // created meanwhile, or an unknown outcome: read again
		}
		if err := s.writeRange(ctx, k, path, next, sealed, &a); err != nil {
			if errors.Is(err, errTryAgain) {
				continue // a concurrent write, or an unknown outcome: read again
			}
			return 0, err
		}
		return n.next, nil
	}
}

// Init creates key at next, or checks that it is already there.
func (s *rangeStore) Init(ctx context.Context, key string, next int64) error {
	k, unlock, err := s.lockKey(ctx, key)
	if err != nil {
		return err
	}
	defer unlock()
	path := s.rangePath(key)
	a := attempts{s: s.session}
	for {
		n, err := s.readKnown(ctx, k, path, &a)
		if err != nil {
			return err
		}
		switch {
		case !n.exists:
			stat, err := s.createRange(ctx, path, formatRange(next, false), &a)
			if err != nil {
				return err
			}
			if stat != nil {
				k.wrote(stat, next, false)
				return nil
			}
		case n.empty:
			err := s.writeRange(ctx, k, path, next, false, &a)
			if !errors.Is(err, errTryAgain) {
				return err
			}
		case n.next == next:
			return nil
		default:
			return fmt.Errorf("zookeeper: %s holds next value %d, not %d: %w", path, n.next, next, driver.ErrConfigMismatch)
		}
	}
}

// errTryAgain reports a write that lost a race or whose outcome is unknown:
// the operation reads the node again.
var errTryAgain = errors.New("try again")

// writeRange compare-and-sets key's node to (next, sealed) on the version
// cached in k, which the caller has just read.
func (s *rangeStore) writeRange(ctx context.Context, k *rangeKey, path string, next int64, sealed bool, a *attempts) error {
	version := k.version
	if err := checkVersion(path, version); err != nil {
		return err
	}
	data := formatRange(next, sealed)
	stat, err := call(ctx, s, func() (*zk.Stat, error) { return s.conn.Set(path, data, version) })
	switch {
	case err == nil:
		if err := k.check(path, stat); err != nil {
			return err
		}
		k.wrote(stat, next, sealed)
		return nil
	case errors.Is(err, zk.ErrBadVersion):
		k.cached = false
		return errTryAgain
	case errors.Is(err, zk.ErrNoNode):
		k.cached = false
		return fmt.Errorf("zookeeper: %s was deleted while in use: %w", path, driver.ErrRecreated)
	}
	k.cached = false
	if err := a.retry(ctx, err); err != nil {
		return fmt.Errorf("zookeeper: write %s: %w", path, err)
	}
	return errTryAgain
}

// createRange creates a missing node holding data, with the parents it
// needs. It returns the node's Stat when this call created it, or nil when
// the caller must read again: the node appeared meanwhile, or the outcome is
// unknown (then the node, if it was created, is not counted as ours).
//
// The create and a set-data of the same data go in one multi: go-zookeeper's
// create answers only a path, while the set-data answers the Stat, whose
// czxid the store remembers; the node starts at version 1.
func (s *rangeStore) createRange(ctx context.Context, path string, data []byte, a *attempts) (*zk.Stat, error) {
	for {
		res, err := call(ctx, s, func() ([]zk.MultiResponse, error) {
			return s.conn.Multi(
				&zk.CreateRequest{Path: path, Data: data, Acl: s.acl},
				&zk.SetDataRequest{Path: path, Data: data, Version: 0})
		})
		switch {
		case err == nil:
			if len(res) != 2 || res[1].Stat == nil {
				return nil, fmt.Errorf("zookeeper: %s: create answered %d results without a Stat", path, len(res))
			}
			return res[1].Stat, nil
		case errors.Is(err, zk.ErrNodeExists):
			return nil, nil
		case errors.Is(err, zk.ErrNoNode):
			// A failed multi applies nothing, so this is only the parent
			// missing, whatever the per-operation results say.
			if err := s.createParents(ctx, path, a); err != nil {
				return nil, err
			}
		default:
			a.unknown = err
			if err := a.retry(ctx, err); err != nil {
				return nil, fmt.Errorf("zookeeper: create %s: %w", path, err)
			}
			return nil, nil
		}
	}
}

// readRange reads and parses a range node, retrying transient failures.
func (s *rangeStore) readRange(ctx context.Context, path string, a *attempts) (rangeNode, error) {
	type got struct {
		data []byte
		stat *zk.Stat
	}
	for {
		g, err := call(ctx, s, func() (got, error) {
			data, stat, err := s.conn.Get(path)
			return got{data, stat}, err
		})
		switch {
		case err == nil:
			n := rangeNode{exists: true, stat: *g.stat}
			var perr error
			n.next, n.sealed, n.empty, perr = parseRange(g.data)
			if perr != nil {
				return rangeNode{}, fmt.Errorf("zookeeper: %s holds %q: %v: %w", path, g.data, perr, driver.ErrCorrupt)
			}
			return n, nil
		case errors.Is(err, zk.ErrNoNode):
			return rangeNode{}, nil
		}
		if err := a.retry(ctx, err); err != nil {
			return rangeNode{}, fmt.Errorf("zookeeper: read %s: %w", path, err)
		}
	}
}

// sync makes the connected server catch up with the leader, so that the
// reads that follow see every write committed before it.
func (s *session) sync(ctx context.Context, path string, a *attempts) error {
	for {
		_, err := call(ctx, s, func() (string, error) { return s.conn.Sync(path) })
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err := a.retry(ctx, err); err != nil {
			return fmt.Errorf("zookeeper: sync %s: %w", path, err)
		}
	}
}

// readKnown reads the node of k at path and adopts it (see adopt). A node
// below what the store saw is read again after a sync before it is
// refused: a session's reads never go back, but a new session (after an
// expiry) may be served by a server behind the leader.
func (s *rangeStore) readKnown(ctx context.Context, k *rangeKey, path string, a *attempts) (rangeNode, error) {
	n, err := s.readRange(ctx, path, a)
	if err != nil {
		return rangeNode{}, err
	}
	err = k.adopt(path, n)
	if !errors.Is(err, errWentBack) {
		return n, err
	}
	if err := s.sync(ctx, path, a); err != nil {
		return rangeNode{}, err
	}
	if n, err = s.readRange(ctx, path, a); err != nil {
		return rangeNode{}, err
	}
	return n, k.adopt(path, n)
}

// adopt takes a freshly read node as the key's state, refusing a node that
// is not the one the store used.
func (k *rangeKey) adopt(path string, n rangeNode) error {
	switch {
	case !n.exists && k.seen:
		k.cached = false
		return fmt.Errorf("zookeeper: %s was deleted while in use; it is not recreated: %w", path, driver.ErrRecreated)
	case !n.exists:
		return nil
	case k.seen && n.stat.Czxid != k.czxid:
		k.cached = false
		return fmt.Errorf("zookeeper: %s was deleted and recreated while in use (czxid %#x, was %#x): %w",
			path, n.stat.Czxid, k.czxid, driver.ErrRecreated)
	case k.seen && n.empty:
		// The store never writes empty data to a node it has used.
		k.cached = false
		return fmt.Errorf("zookeeper: %s lost its value (empty data): %w", path, driver.ErrCorrupt)
	case k.seen && n.next < k.high:
		k.cached = false
		return fmt.Errorf("zookeeper: %s holds next value %d, below %d this store saw it hold: it went back "+
			"(written back from a copy, a restored backup), and its values were handed out: %w", path, n.next, k.high, errWentBack)
	case k.seen && k.highSealed && !n.sealed:
		k.cached = false
		return fmt.Errorf("zookeeper: %s is not sealed, but this store saw it sealed at %d: it went back "+
			"(written back from a copy, a restored backup): %w", path, k.high, errWentBack)
	}
	k.seen, k.czxid = true, n.stat.Czxid
	k.cached, k.version, k.next, k.sealed = true, n.stat.Version, n.next, n.sealed
	k.raise(n.next, n.sealed)
	return nil
}

// errWentBack is the ErrCorrupt of a node read below what the store saw
// it hold; readKnown reads such a node once more after a sync, since only a
// server behind the leader could show it legitimately.
var errWentBack = fmt.Errorf("%w", driver.ErrCorrupt)

// raise records a value and seal the node held.
func (k *rangeKey) raise(next int64, sealed bool) {
	k.high, k.highSealed = max(k.high, next), k.highSealed || sealed
}

// check refuses the Stat of a write that landed on another node than the
// one the store used (deleted and recreated to the same version).
func (k *rangeKey) check(path string, stat *zk.Stat) error {
	if stat.Czxid != k.czxid {
		k.cached = false
		return fmt.Errorf("zookeeper: %s was deleted and recreated while in use (czxid %#x, was %#x); "+
			"a write landed on the new node but its range is not handed out: %w",
			path, stat.Czxid, k.czxid, driver.ErrRecreated)
	}
	return nil
}

// wrote records the store's own successful write.
func (k *rangeKey) wrote(stat *zk.Stat, next int64, sealed bool) {
	k.seen, k.czxid = true, stat.Czxid
	k.cached, k.version, k.next, k.sealed = true, stat.Version, next, sealed
	k.raise(next, sealed)
}
