package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/cosid-go/store/driver"
)

// Errors, for errors.Is. Every error a store returns wraps one of these, a
// context error, or the driver's own error (reachable with errors.As).
var (
	ErrSealed          = driver.ErrSealed          // Next on a sealed key
	ErrExhausted       = driver.ErrExhausted       // a range past MaxInt64, or no free slot
	ErrLeaseLost       = driver.ErrLeaseLost       // the slot (or lock) is no longer this holder's
	ErrInvalidArgument = driver.ErrInvalidArgument // a bad key, name, step, ttl, slot or option
	ErrCorrupt         = driver.ErrCorrupt         // stored data that cannot be parsed; left untouched
	ErrRecreated       = driver.ErrRecreated       // a node this store used was deleted or recreated
	ErrConfigMismatch  = driver.ErrConfigMismatch  // Init or a namespace disagrees with what is stored
	ErrUnsupported     = driver.ErrUnsupported     // the driver lacks this capability
	ErrClosed          = driver.ErrClosed          // the store was closed
	ErrLocked          = driver.ErrLocked          // TryLock found the lock held; a seeded slot is live
	ErrNotFound        = driver.ErrNotFound        // a namespace or lock that does not exist
	ErrUnavailable     = driver.ErrUnavailable     // no server answered in time; also a context error
)

// Error is the error every store operation returns: the operation, what it
// was applied to, and the cause.
type Error struct {
	Op  string // "Next", "Acquire", ...
	Key string // the key, namespace, slot or lock name
	Err error
}

func (e *Error) Error() string {
	if a, ok := e.Err.(*argError); e.Key == "" || ok && a.value == e.Key {
		return "store: " + e.Op + ": " + e.Err.Error() // the cause names the key itself
	}
	return fmt.Sprintf("store: %s %s: %v", e.Op, quoteName(e.Key), e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// wrap wraps err once. When the operation's context ended, the result also
// satisfies errors.Is with that context error, whatever the driver returned.
func wrap(ctx context.Context, op, key string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = &ctxError{err: err, ctx: cerr}
	}
	return &Error{Op: op, Key: key, Err: err}
}

type ctxError struct{ err, ctx error }

func (e *ctxError) Error() string   { return e.err.Error() + " (" + e.ctx.Error() + ")" }
func (e *ctxError) Unwrap() []error { return []error{e.err, e.ctx} }

// argError is a rejected argument, said in the caller's words. It is
// ErrInvalidArgument for errors.Is without repeating that sentinel's text.
type argError struct {
	msg   string
	value string // the argument the message quotes, if any
}

func (e *argError) Error() string { return e.msg }
func (e *argError) Unwrap() error { return ErrInvalidArgument }

func invalid(format string, args ...any) error {
	return &argError{msg: fmt.Sprintf(format, args...)}
}

// invalidValue is invalid for a message that quotes value, so that an Error
// about the same key does not name it twice.
func invalidValue(value, format string, args ...any) error {
	return &argError{msg: fmt.Sprintf(format, args...), value: value}
}

// driverBug reports a driver result that breaks the driver contract.
func driverBug(format string, args ...any) error {
	return fmt.Errorf("driver broke its contract: "+format, args...)
}
