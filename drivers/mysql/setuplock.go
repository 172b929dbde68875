package mysql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
)

// setupLock holds a named lock (GET_LOCK) for the database while the store
// creates its tables, on a connection of its own, and returns what
// releases it. On these servers CREATE TABLE commits the transaction
// around it, so without the lock a store opening at once could see
// cosid_meta before its version row is written, and refuse it as corrupt.
// A connection that ends releases its lock.
func setupLock(ctx context.Context, c *connector, database string) (func(), error) {
	one := sql.OpenDB(c)
	one.SetMaxOpenConns(1)
	conn, err := one.Conn(ctx)
	if err != nil {
		one.Close()
		return nil, err
	}
	release := func() {
		conn.Close()
		one.Close()
	}
	// A name of at most 64 characters, whatever the database's.
	sum := sha256.Sum256([]byte(database))
	name := "cosid-setup-" + hex.EncodeToString(sum[:20])
	var got sql.NullInt64
	// Bounded by ctx: the wait ends with it (the statement is killed).
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 31536000)", name).Scan(&got); err != nil {
		release()
		return nil, err
	}
	if got.Int64 != 1 {
		release()
		return nil, fmt.Errorf("mysql: GET_LOCK(%s) for creating the tables answered %v", name, got)
	}
	return release, nil
}
