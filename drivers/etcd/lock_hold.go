package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
)

// lockHold is a waiter key of the session and, once granted, its hold.
type lockHold struct {
	s   *lockStore
	ss  *lockSession
	key string
	n   int64 // the key's number in its session (lockSession.take)

	followed bool // its lock name is watched for it (lockStore.follow; lockSession.mu)

	// Held through an Unlock: one at a time.
	mu       sync.Mutex
	unlocked bool
	tried    bool // an Unlock's delete whose answer was lost (it may be applied)

	state holdState // the key as the Lock call, the session's watch and Unlock saw it
}

// holdState is what is known of a hold's key. Its own mutex, not the
// Unlock's: the session's watch reports a delete while an Unlock waits
// for its answer.
type holdState struct {
	mu        sync.Mutex
	rev       int64 // the key's create revision, once known
	offset    int64 // the locks' fence offset its create or grant read (lock_seal.go)
	granted   bool
	deleted   int64 // the latest delete of the key seen before the grant
	releasing bool  // Unlock's own delete is under way
	gone      bool  // and the session's watch saw the key deleted meanwhile
}

// created sets the key's create revision.
func (h *lockHold) created(rev int64) {
	h.state.mu.Lock()
	defer h.state.mu.Unlock()
	h.state.rev = rev
}

// grant makes h a hold. A delete of its key seen meanwhile came after the
// grant (the grant read the key), so it ends the hold at once.
func (h *lockHold) grant() *lockHold {
	h.state.mu.Lock()
	defer h.state.mu.Unlock()
	h.state.granted = true
	if h.state.deleted > h.state.rev {
		h.loseLocked(fmt.Sprintf("deleted at revision %d", h.state.deleted))
	}
	return h
}

// sawDelete is told of each delete of the hold's key at revision rev (or
// of the key found missing at rev): one after its create ends the hold,
// unless Unlock made it. Before the grant, or before the create revision
// is known, it is only noted: the watch can report a delete before the
// Lock that created the key has its answer.
func (h *lockHold) sawDelete(rev int64, what string) {
	h.state.mu.Lock()
	defer h.state.mu.Unlock()
	if !h.state.granted {
		h.state.deleted = max(h.state.deleted, rev)
		return
	}
	if rev <= h.state.rev {
		return // a delete of an earlier key of the same name
	}
	if h.state.releasing {
		h.state.gone = true
		return
	}
	h.loseLocked(what)
}

// loseLocked loses the session of a hold whose key went without Unlock:
// an operator's delete, or a revoke of the lease, frees the lock for the
// next waiter at once, with the session still renewed (a deleted key) or
// until the next keep-alive fails. The waiter can be granted in the same
// instant the holder hears of it, so Lost closes promptly, not before.
// Losing the whole session (and revoking it, so that its other keys go at
// once) is the simple safe answer: its other holds are ended too.
func (h *lockHold) loseLocked(what string) {
	h.s.abandon(h.ss, fmt.Errorf("lock key %s %s by someone else (an operator's delete or lease revoke): the lock is no longer held",
		h.key, what))
}

// Unlock deletes the hold's own key.
func (h *lockHold) Unlock(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.unlocked {
		return nil
	}
	if !h.ss.alive() {
		// The lease is gone or will be (the store closed, or it could not
		// be kept alive): its expiry deletes the key; the holder learns
		// that its critical section was not protected to the end.
		h.unlocked = true
		select {
		case <-h.s.closing:
		default:
			h.s.dropWaiter(h.key, h.state.rev, h.forget)
		}
		return fmt.Errorf("%v: %w", h.ss.lostErr(), driver.ErrLeaseLost)
	}
	// Only this hold's key: the delete may be applied after its answer
	// was lost and the number reused for a new key of the same name.
	h.setReleasing(true)
	for attempt := 1; ; attempt++ {
		resp, err := h.s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(h.key), "=", h.state.rev)).
			Then(clientv3.OpDelete(h.key)).Commit()
		if err = h.s.check(ctx, err); err == nil {
			if !resp.Succeeded && !h.tried {
				// Someone else deleted the key before this Unlock, and the
				// next waiter may have been granted then, while the holder
				// trusted the hold: the watch has not told it yet, Unlock
				// must.
				h.setReleasing(false)
				h.loseLocked("found already deleted by Unlock")
				h.unlocked = true
				h.forget()
				return fmt.Errorf("%v: %w", h.ss.lostErr(), driver.ErrLeaseLost)
			}
			h.unlocked = true // or an earlier attempt deleted it
			h.forget()
			return nil
		}
		h.tried = true // applied, perhaps: a later attempt may find no key
		if errors.Is(err, driver.ErrClosed) {
			h.unlocked = true // Close revokes the lease
			return err
		}
		if retryable(err) && ctx.Err() == nil {
			if berr := h.s.backoff(ctx, attempt, err); berr == nil {
				continue
			} else {
				err = berr
			}
		}
		// Given up: the key is removed in the background, so that a lost
		// answer costs this Unlock only, not the lock until the session
		// ends. Releasing stays set: a delete the watch sees is this one.
		h.unlocked = true
		h.s.dropWaiter(h.key, h.state.rev, h.forget)
		if (retryable(err) || ctx.Err() != nil) && !errors.Is(err, driver.ErrUnavailable) && !errors.Is(err, driver.ErrClosed) {
			err = fmt.Errorf("%w (no answer): %w", driver.ErrUnavailable, err)
		}
		return fmt.Errorf("unlock of lock key %s: %w; its removal goes on in the background", h.key, err)
	}
}

// forget forgets a hold whose key is deleted.
func (h *lockHold) forget() {
	h.ss.unwatch(h)
	h.ss.release(h.n)
}

// setReleasing marks Unlock's delete under way or over, and says whether
// the session's watch saw the key deleted meanwhile.
func (h *lockHold) setReleasing(on bool) (gone bool) {
	h.state.mu.Lock()
	defer h.state.mu.Unlock()
	h.state.releasing = on
	return h.state.gone
}

func (h *lockHold) Fence() int64 { return h.state.rev + h.state.offset }

// Lost checks the deadline on each call, besides the session's own timer.
func (h *lockHold) Lost() <-chan struct{} {
	h.ss.alive()
	return h.ss.lost
}

// LostErr says why the hold was lost (driver.LostCause).
func (h *lockHold) LostErr() error { return h.ss.lostErr() }
