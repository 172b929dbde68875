package sqlstore

import (
	"context"
	"fmt"
	"sync"

	"github.com/cosid-go/store/driver"
)

// Hold is a held lock.
type Hold[S LockSession] struct {
	ss     *Sessions[S]
	se     S
	name   string
	ticket int64
	fence  int64 // the ticket, or above it after a raise (RaisedFence)

	mu       sync.Mutex
	unlocked bool
}

// Fence is the hold's fence, as its grant read it.
func (h *Hold[S]) Fence() int64 { return h.fence }

// Lost looks at the session's deadline itself (Liveness).
func (h *Hold[S]) Lost() <-chan struct{} { return h.se.Lost() }

// LostErr says why the hold was lost, once Lost is closed
// (driver.LostCause).
func (h *Hold[S]) LostErr() error { return h.se.Err() }

// Unlock deletes this hold's row only, whatever ctx says: a hold left
// behind would block everyone until its session expires.
func (h *Hold[S]) Unlock(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.unlocked {
		return nil
	}
	if h.se.IsLost() {
		h.unlocked = true
		return fmt.Errorf("lock session lost while held: %w", driver.ErrLeaseLost)
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.se.T())
	defer cancel()
	found, err := h.ss.q.Leave(uctx, h.se, h.name, h.ticket)
	if err != nil {
		// The row stays until the removal, retried in the background,
		// succeeds; the store's other holds are not touched.
		h.ss.RemoveLater(h.se, h.name, h.ticket)
		h.unlocked = true
		return fmt.Errorf("unlock: %w; the removal of the hold goes on in the background", h.ss.q.Unavailable(err))
	}
	h.unlocked = true
	if !found {
		return fmt.Errorf("the hold's row was gone: %w", driver.ErrLeaseLost)
	}
	return nil
}
