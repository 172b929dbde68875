package store

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
)

// WithLogger makes the store log what an operator needs to know: connection
// state changes, retries after a connection loss, writes with an unknown
// outcome turned into gaps, and leases and locks lost, with the reason.
// Nothing is logged per successful operation. Without it a store is silent.
func WithLogger(l *slog.Logger) Option {
	return func(s *Store) error {
		if l == nil {
			return invalid("the logger is nil")
		}
		s.logger = l
		return nil
	}
}

// log writes e to the logger, at the level its kind deserves. A lock taken
// or released is the caller's own call and is not logged; the background
// work of generators (renewals, prefetch growth) is logged at Debug, a
// lease's start and end at Info.
func (s *Store) log(e Event) {
	if s.logger == nil {
		return
	}
	level, msg := slog.LevelInfo, ""
	var attrs []slog.Attr
	if e.Key != "" {
		attrs = append(attrs, slog.String("key", e.Key))
	}
	switch e.Kind {
	case Connected:
		msg = "connected"
		attrs = append(attrs, slog.String("server", e.Server))
		if e.SessionID != 0 { // only drivers with a server session have one (ZooKeeper's)
			attrs = append(attrs, slog.String("session", "0x"+strconv.FormatInt(e.SessionID, 16)),
				slog.Duration("session_timeout", e.Timeout))
		}
	case Disconnected:
		level, msg = slog.LevelWarn, "disconnected"
	case Expired:
		level, msg = slog.LevelError, "session expired"
	case Retry:
		msg = "retrying after a connection loss"
		attrs = append(attrs, slog.Int("attempt", e.Attempt))
	case UnknownOutcome:
		level, msg = slog.LevelWarn, "write outcome unknown: values skipped"
		attrs = append(attrs, slog.Int64("first", e.Value), slog.Int64("count", e.Count))
	case LockLost:
		level, msg = slog.LevelError, "lock lost"
		if errors.Is(e.Err, ErrClosed) {
			level, msg = slog.LevelInfo, "lock released by Close"
		}
		attrs = append(attrs, slog.Int64("fence", e.Fence))
	case LeaseLost:
		level, msg = slog.LevelError, "lease lost"
		attrs = append(attrs, slog.Int64("fence", e.Fence))
	case LeaseAcquired:
		msg = "lease acquired"
		attrs = append(attrs, slog.Int64("fence", e.Fence), slog.Time("deadline", e.Deadline))
	case FloorWait:
		msg = "waiting for the clock to reach the lease's floor"
		attrs = append(attrs, slog.Duration("wait", e.Wait))
	case LeaseRenewed:
		level, msg = slog.LevelDebug, "lease renewed"
		attrs = append(attrs, slog.Time("deadline", e.Deadline))
	case LeaseReleased:
		msg = "lease released" // at the level of "lease acquired": a term's end is as worth knowing as its start
	case PrefetchGrown:
		level, msg = slog.LevelDebug, "prefetch grown"
		attrs = append(attrs, slog.Int64("size", e.Count))
	default:
		return // LockAcquired, LockReleased: the caller's own calls
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("err", e.Err.Error()))
	}
	s.logger.LogAttrs(context.Background(), level, "store: "+msg, attrs...)
}
