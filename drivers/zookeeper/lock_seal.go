package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// The locks' seal and fence offset are lines of the data of {root}/lock,
// the parent of every lock name's node, which a purge keeps:
// locks_sealed=true once SealLocks ran (until RaiseLockFences),
// lock_fence_offset=N once RaiseLockFences raised the fences,
// locks_unsealed=Z once a RaiseLockFences undid a seal (Z: the seal's
// mzxid; a node created before it is never granted). Each lock
// node's create is a multi that also checks that node's version as the
// store last read it (0, as created, until the store reads it): a seal or
// raise since fails it as a whole, nothing created, and the store reads
// the node again (refusing with ErrSealed if sealed) before it creates
// again. So an uncontended Lock sends no request more. A node that waited
// checks the version again, in a multi of that check alone, when it comes
// first: a waiter queued before a seal is never granted after it, even if
// a raise undid the seal before that check (locks_unsealed). czxids
// are the ensemble's zxids, which cannot be set, so a fence is the node's
// czxid plus the offset its create checked, or, for a node that waited
// while a raise changed the root, the offset its grant's check read (a
// raise passes no waiter's fence). A store that may not read the node
// cannot check it and ignores the seal and a raise while it waits. The
// offset only grows: a store that reads one below an offset it read
// before (the root restored from before a raise) refuses with ErrCorrupt
// until a raise puts it back at least there.
const (
	fieldLocksSealed     = "locks_sealed"
	fieldLockFenceOffset = "lock_fence_offset"
	fieldLocksUnsealed   = "locks_unsealed"
)

var _ driver.LockSealer = (*driverStore)(nil)

type lockRoot struct {
	sealed   bool
	offset   int64
	unsealed int64 // the mzxid of the last seal a raise undid
}

// parseLockRoot reads the lock lines of the root's data.
func parseLockRoot(root string, data []byte) (lockRoot, error) {
	lines, err := parseNodeLines(data)
	if err != nil {
		return lockRoot{}, corruptData(root, data, err)
	}
	var r lockRoot
	if v, ok := lines.get(fieldLocksSealed); ok {
		if v != "true" {
			return lockRoot{}, corruptData(root, data, fmt.Errorf("%s is %q, not true", fieldLocksSealed, v))
		}
		r.sealed = true
	}
	if v, ok := lines.get(fieldLockFenceOffset); ok {
		if r.offset, err = parseDecimal(fieldLockFenceOffset, v); err != nil {
			return lockRoot{}, corruptData(root, data, err)
		}
	}
	if v, ok := lines.get(fieldLocksUnsealed); ok {
		if r.unsealed, err = parseDecimal(fieldLocksUnsealed, v); err != nil {
			return lockRoot{}, corruptData(root, data, err)
		}
	}
	return r, nil
}

// lockRootPath is the parent of every lock name's node: it holds the
// locks' seal and fence offset, and a purge keeps it.
func (s *lockStore) lockRootPath() string { return s.root + "/lock" }

func errLocksSealed(name string) error {
	return fmt.Errorf("zookeeper: lock %q: the store's locks are sealed (they moved to another store): %w", name, driver.ErrSealed)
}

// offsetFence is a lock node's fence: its czxid plus the offset.
func offsetFence(name string, czxid, offset int64) (int64, error) {
	if offset > math.MaxInt64-czxid {
		return 0, fmt.Errorf("zookeeper: lock %q: czxid %d plus the fence offset %d passes the largest int64: %w",
			name, czxid, offset, driver.ErrExhausted)
	}
	return czxid + offset, nil
}

// updateLockRoot rewrites the root's data with change, on the version it
// read (given with its Stat), until no other write came between; it
// returns the new state and the write's Stat. Both writers compare that
// version, so one applied late, after the other, changes nothing.
func (s *lockStore) updateLockRoot(ctx context.Context, change func(lockRoot, *zk.Stat, []byte) ([]byte, error)) (lockRoot, *zk.Stat, error) {
	a := attempts{s: s.session}
	for {
		rs, err := s.getNodes(ctx, []string{s.lockRootPath()}, &a)
		if err != nil {
			return lockRoot{}, nil, err
		}
		r := rs[0]
		if errors.Is(r.err, zk.ErrNoNode) {
			if err := s.createParents(ctx, s.lockRootPath()+"/", &a); err != nil {
				return lockRoot{}, nil, err
			}
			continue
		}
		if r.err != nil {
			return lockRoot{}, nil, fmt.Errorf("zookeeper: read %s: %w", s.lockRootPath(), r.err)
		}
		cur, err := parseLockRoot(s.lockRootPath(), r.data)
		if err != nil {
			return lockRoot{}, nil, err
		}
		data, err := change(cur, r.stat, r.data)
		if err == nil {
			err = checkVersion(s.lockRootPath(), r.stat.Version)
		}
		if err != nil {
			return lockRoot{}, nil, fmt.Errorf("zookeeper: %s: %w", s.lockRootPath(), err)
		}
		stat, err := call(ctx, s, func() (*zk.Stat, error) { return s.conn.Set(s.lockRootPath(), data, r.stat.Version) })
		switch {
		case err == nil:
			next, err := parseLockRoot(s.lockRootPath(), data)
			if err == nil {
				s.rootCache.set(stat.Version, next)
			}
			return next, stat, err
		case errors.Is(err, zk.ErrBadVersion):
			continue
		}
		// A lost answer: the next read tells (both writes are idempotent).
		if err := a.retry(ctx, err); err != nil {
			return lockRoot{}, nil, fmt.Errorf("zookeeper: write %s: %w", s.lockRootPath(), err)
		}
	}
}

// SealLocks writes locks_sealed=true (driver.LockSealer), always, so that
// its mzxid is above every lock node's czxid created before: that plus the
// offset is the floor.
func (s *lockStore) SealLocks(ctx context.Context) (int64, error) {
	r, stat, err := s.updateLockRoot(ctx, func(cur lockRoot, _ *zk.Stat, data []byte) ([]byte, error) {
		// An offset gone back would give a floor below fences granted.
		if err := s.rootCache.behind(cur); err != nil {
			return nil, err
		}
		return withLine(data, fieldLocksSealed, "true")
	})
	if err != nil {
		return 0, err
	}
	return offsetFence("*", stat.Mzxid, r.offset)
}

// RaiseLockFences raises lock_fence_offset to floor (a fence is a czxid,
// at least 1, plus the offset: above floor) and removes the seal, noting
// the seal's mzxid (the root's, as read) in locks_unsealed: the nodes
// created before it stay refused.
func (s *lockStore) RaiseLockFences(ctx context.Context, floor int64) error {
	_, _, err := s.updateLockRoot(ctx, func(cur lockRoot, stat *zk.Stat, data []byte) ([]byte, error) {
		data, err := withLine(data, fieldLockFenceOffset, strconv.FormatInt(max(cur.offset, floor), 10))
		if err != nil {
			return nil, err
		}
		if !cur.sealed {
			return data, nil
		}
		if data, err = withLine(data, fieldLocksUnsealed, strconv.FormatInt(stat.Mzxid, 10)); err != nil {
			return nil, err
		}
		return withoutLine(data, fieldLocksSealed)
	})
	return err
}

// LocksSealed reads the root's locks_sealed line.
func (s *lockStore) LocksSealed(ctx context.Context) (bool, error) {
	a := attempts{s: s.session}
	rs, err := s.getNodes(ctx, []string{s.lockRootPath()}, &a)
	if err != nil {
		return false, err
	}
	switch r := rs[0]; {
	case errors.Is(r.err, zk.ErrNoNode):
		return false, nil
	case r.err != nil:
		return false, fmt.Errorf("zookeeper: read %s: %w", s.lockRootPath(), r.err)
	default:
		lr, err := parseLockRoot(s.lockRootPath(), r.data)
		return lr.sealed, err
	}
}

// withoutLine returns data without line name, the others kept in order.
func withoutLine(data []byte, name string) ([]byte, error) {
	lines, err := parseNodeLines(data)
	if err != nil {
		return nil, err
	}
	var out []byte
	for _, l := range lines {
		if l.name != name {
			out = fmt.Appendf(out, "%s=%s\n", l.name, l.value)
		}
	}
	return out, nil
}

// errRootChanged: a create's check of the root's version failed; nothing
// was created.
var errRootChanged = errors.New("zookeeper: the root changed since the store read it")

// lockRootCache is the root as the store last read it.
type lockRootCache struct {
	mu      sync.Mutex
	known   bool
	version int32
	state   lockRoot
	noCheck bool // the root is not readable (ACL): nothing is checked
	// highest is the highest fence offset the store read. Offsets only
	// grow, so a lower one is the root written back from before a raise
	// (a restore): czxids do not make up for it, the fences would go
	// back below those granted after the raise.
	highest int64
}

// check is the check to add to a create, with the offset it stands for;
// nil when the root cannot be read.
func (c *lockRootCache) check(root string) (*zk.CheckVersionRequest, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.noCheck {
		return nil, c.state.offset
	}
	v := int32(0) // a root the store has not read is as created
	if c.known {
		v = c.version
	}
	return &zk.CheckVersionRequest{Path: root, Version: v}, c.state.offset
}

// checkFailed reads a check's result in a failed multi: errRootChanged if
// it is why the multi failed, nil otherwise.
func (c *lockRootCache) checkFailed(err error) error {
	switch {
	case errors.Is(err, zk.ErrBadVersion):
		return errRootChanged
	case errors.Is(err, zk.ErrNoAuth):
		c.mu.Lock()
		c.noCheck = true
		c.mu.Unlock()
		return errRootChanged // create again, without the check
	}
	return nil
}

func (c *lockRootCache) forget() {
	c.mu.Lock()
	c.known = false
	c.mu.Unlock()
}

// set records the root as read at version, unless its offset is below
// one read before: then the cache forgets the version, so that the next
// create's check fails and its read of the root refuses (behind).
func (c *lockRootCache) set(version int32, state lockRoot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if state.offset < c.highest {
		c.known = false
		return
	}
	c.known, c.version, c.state, c.highest = true, version, state, state.offset
}

// behind refuses a root whose fence offset is below one the store read.
func (c *lockRootCache) behind(state lockRoot) error {
	c.mu.Lock()
	highest := c.highest
	c.mu.Unlock()
	if state.offset < highest {
		return fmt.Errorf("the lock fence offset is %d, below %d, which this store read before: "+
			"the node went back (restored from a backup, or written back by hand); raise the lock fences: %w",
			state.offset, highest, driver.ErrCorrupt)
	}
	return nil
}

// lockRootOpen refuses a Lock of name while the cache says the locks are
// sealed, after reading the node again (a create checked on a sealed
// version would succeed); otherwise the create's check tells.
func (s *lockStore) lockRootOpen(ctx context.Context, name string, a *attempts) error {
	c := &s.rootCache
	c.mu.Lock()
	skip := c.noCheck || !c.known || !c.state.sealed // the create's check tells
	c.mu.Unlock()
	if skip {
		return nil
	}
	st, err := s.readLockRoot(ctx, a)
	if err != nil {
		return err
	}
	if st.sealed {
		return errLocksSealed(name)
	}
	return nil
}

// readLockRoot reads the root into the cache. A root that is missing (it
// is created with the lock's parents) or not readable reads as open.
func (s *lockStore) readLockRoot(ctx context.Context, a *attempts) (lockRoot, error) {
	rs, err := s.getNodes(ctx, []string{s.lockRootPath()}, a)
	if err != nil {
		return lockRoot{}, err
	}
	r := rs[0]
	switch {
	case errors.Is(r.err, zk.ErrNoNode):
		s.rootCache.forget()
		return lockRoot{}, nil
	case errors.Is(r.err, zk.ErrNoAuth):
		s.rootCache.mu.Lock()
		s.rootCache.noCheck = true
		s.rootCache.mu.Unlock()
		return lockRoot{}, nil
	case r.err != nil:
		return lockRoot{}, fmt.Errorf("zookeeper: read %s: %w", s.lockRootPath(), r.err)
	}
	st, err := parseLockRoot(s.lockRootPath(), r.data)
	if err != nil {
		return lockRoot{}, err
	}
	if err := s.rootCache.behind(st); err != nil {
		return lockRoot{}, fmt.Errorf("zookeeper: %s: %w", s.lockRootPath(), err)
	}
	s.rootCache.set(r.stat.Version, st)
	return st, nil
}

// stillOpen checks, for a node that waited and is now first, that the
// node holding the seal is still at the version its create checked, in a multi of that check
// alone; if it is not, that the locks are not sealed, nor were since the
// node's create (czxid) by a seal a raise undid. It returns the fence
// offset to grant with: the one the create checked, or, the root changed
// since, the root's now, so that a raise while the node waited puts its
// fence above the raise's floor too (driver.LockSealer).
func (s *lockStore) stillOpen(ctx context.Context, n *lockNode, czxid int64, a *attempts) (int64, error) {
	s.sess.mu.Lock()
	check, name, offset := n.checked, n.name, n.offset
	s.sess.mu.Unlock()
	if check == nil {
		return offset, nil
	}
	for {
		res, err := call(ctx, s, func() ([]zk.MultiResponse, error) { return s.conn.Multi(check) })
		if err == nil {
			return offset, nil
		}
		if len(res) > 0 && (errors.Is(res[0].Error, zk.ErrBadVersion) || errors.Is(res[0].Error, zk.ErrNoAuth)) {
			st, err := s.readLockRoot(ctx, a)
			if err != nil {
				return 0, err
			}
			if st.sealed || st.unsealed > czxid {
				return 0, errLocksSealed(name)
			}
			return max(offset, st.offset), nil
		}
		if definite(err) {
			return 0, fmt.Errorf("zookeeper: check %s: %w", s.lockRootPath(), err)
		}
		if err := a.retry(ctx, err); err != nil {
			return 0, fmt.Errorf("zookeeper: check %s: %w", s.lockRootPath(), err)
		}
	}
}
