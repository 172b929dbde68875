package zookeeper

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// One watch per watched path per store. go-zookeeper keeps every watch
// channel it hands out until its node changes, so each Lock call that gave
// up waiting on a long-held lock would otherwise leave one more channel in
// the connection. Waiters of the store share one instead.

// sharedWatch is a watch set on one path; fired closes when go-zookeeper
// delivers its event (the node changed, or the session ended) or the store
// closes.
type sharedWatch struct {
	fired chan struct{}
}

// watchLockNode sets, or shares, a watch on path and returns a channel
// closed when it fires, or nil if the node is gone. It uses getData, not
// exists: exists on a missing node leaves a watch for its creation, which
// for a sequential name never comes, on the server and in go-zookeeper,
// for the session's lifetime.
func (s *lockStore) watchLockNode(ctx context.Context, path string, a *attempts) (<-chan struct{}, error) {
	ss := &s.sess
	ss.mu.Lock()
	w := ss.watches[path]
	ss.mu.Unlock()
	if w != nil {
		return w.fired, nil
	}
	for {
		ch, err := call(ctx, s, func() (<-chan zk.Event, error) {
			_, _, ch, err := s.conn.GetW(path)
			return ch, err
		})
		switch {
		case err == nil:
			return s.shareWatch(path, ch), nil
		case errors.Is(err, zk.ErrNoNode):
			return nil, nil
		}
		if err := a.retry(ctx, err); err != nil {
			return nil, fmt.Errorf("zookeeper: watch %s: %w", path, err)
		}
	}
}

// shareWatch records go-zookeeper's channel ch for path, unless another
// call recorded one meanwhile (both fire on the same change).
func (s *lockStore) shareWatch(path string, ch <-chan zk.Event) <-chan struct{} {
	ss := &s.sess
	bg := ss.background()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if w := ss.watches[path]; w != nil {
		return w.fired
	}
	w := &sharedWatch{fired: make(chan struct{})}
	if ss.stopped {
		close(w.fired)
		return w.fired
	}
	if ss.watches == nil {
		ss.watches = map[string]*sharedWatch{}
	}
	ss.watches[path] = w
	ss.wg.Add(1)
	go func() {
		defer ss.wg.Done()
		select {
		case <-ch:
			ss.fired.Add(1)
		case <-bg.Done():
		}
		ss.mu.Lock()
		if ss.watches[path] == w {
			delete(ss.watches, path)
		}
		ss.mu.Unlock()
		close(w.fired)
	}()
	return w.fired
}
