package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"
)

// tripReply is the answer to one go-zookeeper call of a round trip.
type tripReply struct {
	data     []byte
	children []string
	stat     *zk.Stat
	err      error
}

// inOneTrip runs go-zookeeper calls at once, each on a goroutine of its own:
// go-zookeeper writes the requests one after the other on the connection
// without waiting for answers, so they travel together, one round trip for
// all. It returns when every call has answered, or when ctx ends.
func inOneTrip(ctx context.Context, g callGroup, ops ...func() tripReply) ([]tripReply, error) {
	return call(ctx, g, func() ([]tripReply, error) {
		out := make([]tripReply, len(ops))
		var wg sync.WaitGroup
		for i, op := range ops {
			wg.Go(func() { out[i] = op() })
		}
		wg.Wait()
		return out, nil
	})
}

func (s *session) tripGet(path string) func() tripReply {
	return func() tripReply {
		data, stat, err := s.conn.Get(path)
		return tripReply{data: data, stat: stat, err: err}
	}
}

func (s *session) tripChildren(path string) func() tripReply {
	return func() tripReply {
		names, stat, err := s.conn.Children(path)
		return tripReply{children: names, stat: stat, err: err}
	}
}

// firstTransient returns the first error of a round trip worth retrying.
func firstTransient(rs []tripReply) error {
	for _, r := range rs {
		if retryable(r.err) {
			return r.err
		}
	}
	return nil
}

// readAll runs the read op (tripGet or tripChildren; verb names it in
// errors) on each of paths in one round trip, retrying the transient
// failures in one trip each time. A missing node is reported in its reply
// (ErrNoNode), not as an error.
func (s *session) readAll(ctx context.Context, verb string, op func(path string) func() tripReply, paths []string, a *attempts) ([]tripReply, error) {
	out := make([]tripReply, len(paths))
	todo := make([]int, len(paths))
	for i := range paths {
		todo[i] = i
	}
	for len(todo) > 0 {
		ops := make([]func() tripReply, len(todo))
		for k, i := range todo {
			ops[k] = op(paths[i])
		}
		rs, err := inOneTrip(ctx, s, ops...)
		if err != nil {
			return nil, err
		}
		var again []int
		var firstTransient error
		for k, i := range todo {
			r := rs[k]
			switch {
			case r.err == nil, errors.Is(r.err, zk.ErrNoNode):
				out[i] = r
			case retryable(r.err):
				again, firstTransient = append(again, i), r.err
			default:
				return nil, fmt.Errorf("zookeeper: %s %s: %w", verb, paths[i], r.err)
			}
		}
		if len(again) > 0 {
			if err := a.retry(ctx, firstTransient); err != nil {
				return nil, fmt.Errorf("zookeeper: %s %s: %w", verb, paths[again[0]], err)
			}
		}
		todo = again
	}
	return out, nil
}

// getNodes reads the data of paths in one round trip (see readAll).
func (s *session) getNodes(ctx context.Context, paths []string, a *attempts) ([]tripReply, error) {
	return s.readAll(ctx, "read", s.tripGet, paths, a)
}
