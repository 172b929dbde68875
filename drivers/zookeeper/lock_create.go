package zookeeper

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// An uncontended Lock costs one round trip, not the two of the plain
// recipe (create, then list), and no request for the fence:
//
//   - The create is a multi of the create and a setData of the lock's
//     parent that writes what is there (nothing: the parent never has
//     data). Both share the multi's transaction, so the setData's mzxid is
//     the new node's czxid, the fence. go-zookeeper returns a Stat from a
//     multi only for a setData; a plain create returns the path alone.
//   - The first listing is sent right behind the create, once the store's
//     own connection has written the create (go-zookeeper's calls block, so
//     only the wire tells when a request is on its way). The server answers
//     a session's requests in order, and a read after a write of the same
//     session sees the write, so the listing shows the new node: one round
//     trip for both. A listing that does not show the node (sent too early,
//     or the create failed) is not used; the Lock lists again.
//
// A store on a caller's connection (New) has no wire to watch: it lists
// once the create has answered.

// createNode sends n's create and returns its path and czxid (0 if
// unknown). A store whose ACL does not let it write the lock's parent
// falls back to a plain create for good: the multi failed as a whole, so
// nothing was created.
func (s *driverStore) createNode(n *lockNode, prefix string) (path string, czxid int64, err error) {
	if !s.lk.plainCreate.Load() {
		res, err := s.conn.Multi(
			&zk.CreateRequest{Path: prefix, Data: []byte(n.owner), Acl: s.acl, Flags: zk.FlagEphemeral | zk.FlagSequence},
			&zk.SetDataRequest{Path: n.parent, Data: nil, Version: -1})
		switch {
		case err == nil && len(res) == 2 && res[1].Stat != nil:
			return res[0].String, res[1].Stat.Mzxid, nil
		case err == nil && len(res) > 0:
			// Not what a server answers; the node exists, its fence is read.
			return res[0].String, 0, nil
		case len(res) < 2 || !errors.Is(res[1].Error, zk.ErrNoAuth):
			return "", 0, err
		}
		// The setData was refused, not the create (the multi names the op
		// that failed): the ACL lacks the write permission.
		s.lk.plainCreate.Store(true)
	}
	path, err = s.conn.Create(prefix, []byte(n.owner), zk.FlagEphemeral|zk.FlagSequence, s.acl)
	return path, 0, err
}

// listing is the answer to a listing of a lock's children.
type listing struct {
	kids []string
	err  error
}

// listBehindCreate sends the listing of n's parent as soon as the wire has
// carried the frame with n's GUID (the create), and delivers its answer;
// it delivers nothing if the create was answered without being written
// (answered closes). It runs on a call goroutine (see call).
func (s *driverStore) listBehindCreate(n *lockNode, written, answered <-chan struct{}, out chan<- listing) {
	defer s.calls.Done()
	select {
	case <-written:
	case <-answered:
		select {
		case <-written:
		default:
			close(out)
			return
		}
	}
	kids, _, err := s.conn.Children(n.parent)
	out <- listing{kids, err}
}

// createWatch tells Lock calls when their create has been written to the
// store's own connection: the frame carries the node's GUID, which nothing
// else sent before it does.
type createWatch struct {
	pending atomic.Int32 // entries in m, so that writes skip the mutex when none
	mu      sync.Mutex
	m       map[string]chan struct{} // GUID -> closed once written
}

// add starts watching for guid; a node's creates are sent one at a time.
func (w *createWatch) add(guid string) chan struct{} {
	ch := make(chan struct{})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]chan struct{}{}
	}
	if _, ok := w.m[guid]; !ok {
		w.pending.Add(1)
	}
	w.m[guid] = ch
	return ch
}

// remove stops the watch add returned as ch, if it is still on.
func (w *createWatch) remove(guid string, ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m[guid] == ch {
		delete(w.m, guid)
		w.pending.Add(-1)
	}
}

// wrote is called with each frame written in full (sniff.go).
func (w *createWatch) wrote(frame []byte) {
	if w.pending.Load() == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for guid, ch := range w.m {
		if bytes.Contains(frame, []byte(guid)) {
			close(ch)
			delete(w.m, guid)
			w.pending.Add(-1)
		}
	}
}
