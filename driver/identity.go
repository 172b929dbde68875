package driver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
)

// Identifier is an optional capability of a persistent store: the store's
// identity, a random value written into the store's own metadata when the
// store is created (a table row, the root node's data), so that two stores
// are the same exactly when their identities are equal, however the
// options that reach them are spelled (two paths to one file, two host
// names of one server). Tools that write to a second store (a migration)
// refuse when both have one identity.
type Identifier interface {
	// StoreID returns the identity, read from the storage at each call
	// (another process may have written it since). A store created before
	// identities existed has none until a store opened with create (the
	// default) gives it one, at its open or at this call; a store opened
	// with create=false never writes it, and gives an error wrapping
	// ErrNotFound instead.
	StoreID(ctx context.Context) (string, error)
}

// OptionCreate is the option every driver of this module accepts, and a
// driver should: "true" (the default) creates the store when it is
// missing (a file, tables, a root node); "false" opens only an existing
// store, and fails with an error wrapping ErrNotFound that says "no store
// at ..." otherwise, having created nothing, and writes nothing at open.
// Read-only tools open with create=false.
const OptionCreate = "create"

// NewStoreID returns a new random identity: 128 bits in hex.
func NewStoreID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// Bool parses key as a boolean (strconv.ParseBool: true, false, 1, 0, ...).
func (o *Options) Bool(key string, def bool) bool {
	v, ok := o.lookup(key)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		o.fail(&OptionError{Key: key, Value: v, Reason: "not a boolean (true or false)"})
		return def
	}
	return b
}
