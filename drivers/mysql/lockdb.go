package mysql

import "github.com/cosid-go/store/internal/sqlstore"

// The lock tables and statements, as PostgreSQL's (drivers/postgres
// lockdb.go) where the servers allow. A session is one store's lock
// session: its own connection, which confirms its row every T/3 (T =
// lockTimeout), adding one to its confirmations. A waiter row belongs to a
// session (a foreign key: it is deleted with it). The holder of a name is
// its lowest ticket. Another store deletes a session only after it has
// seen its confirmations stand still for the session's T on its own
// monotonic clock (sqlstore.Observations), never by comparing database
// times. confirmed_at is kept for operators only.
//
// Neither server has a sequence that both share (MariaDB's SEQUENCE is
// not MySQL's, and an AUTO_INCREMENT counter could go back after a
// restart on MySQL 5.7 and a purge of the rows): tickets and session ids
// come from one counter row, cosid_lock_state, which an enqueue updates
// while it holds its name's row, so tickets of a name commit in order.
// The row also carries the seal (lockseal.go), so an enqueue reads the
// seal under the same row lock a SealLocks takes.
var lockTables = []string{
	`CREATE TABLE IF NOT EXISTS {p}cosid_lock_state (
		id TINYINT PRIMARY KEY,
		ticket BIGINT NOT NULL,
		sealed BOOLEAN NOT NULL,
		unsealed BIGINT NOT NULL) ENGINE=InnoDB`,
	`INSERT INTO {p}cosid_lock_state (id, ticket, sealed, unsealed) VALUES (1, 0, FALSE, 0)
		ON DUPLICATE KEY UPDATE id = id`,
	`CREATE TABLE IF NOT EXISTS {p}cosid_lock (name VARBINARY(1024) PRIMARY KEY) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS {p}cosid_lock_session (
		id BIGINT PRIMARY KEY,
		conn_id BIGINT NOT NULL,
		confirmed_at BIGINT NOT NULL,
		timeout_ms BIGINT NOT NULL,
		confirmations BIGINT NOT NULL) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS {p}cosid_lock_waiter (
		ticket BIGINT PRIMARY KEY,
		name VARBINARY(1024) NOT NULL,
		owner BLOB NOT NULL,
		session BIGINT NOT NULL,
		KEY cosid_lock_waiter_name (name, ticket),
		KEY cosid_lock_waiter_session (session),
		FOREIGN KEY (session) REFERENCES {p}cosid_lock_session (id) ON DELETE CASCADE) ENGINE=InnoDB`,
}

// fenceOf is the fence of ticket column col: the ticket, plus the raise's
// offset if at or below the last ticket of that raise
// (sqlstore.RaisedFence).
func fenceOf(col string) string {
	return `CASE WHEN ` + col + ` <= COALESCE((SELECT CAST(value AS SIGNED) FROM {p}cosid_meta WHERE name = '` + sqlstore.RaisedLast + `'), 0)
		THEN ` + col + ` + COALESCE((SELECT CAST(value AS SIGNED) FROM {p}cosid_meta WHERE name = '` + sqlstore.RaisedOffset + `'), 0)
		ELSE ` + col + ` END`
}

// lockStatements are the lock code's statements, written for the
// database once when a store opens. Those run through database/sql
// directly take ? placeholders.
type lockStatements struct {
	NewID, SessionStart, SessionConfirm, Sessions, SessionEnd string
	LockName, EnqueueCheck, Enqueue, Pass, Takeover           string
	LockNameRow, Leave                                        string
	Locks, ListLocks, LockRow, Waiters                        string
	// lockseal.go
	SealLocks, StateRead, StateLock, RaiseLockFences string
	RaiseState, RaiseRecord                          string
}

func newLockStatements(d sqlstore.Dialect) (*lockStatements, error) {
	d.Statements = nil // the dialect's replace shared statements, not these
	st := &lockStatements{
		// The next ticket or session id, in the OK packet: ids never
		// repeat, so no watch of an old session carries over to a new one.
		// Only above the ids the store saw (no row changed: the counter
		// went back, and stays where it is).
		NewID: `UPDATE {p}cosid_lock_state SET ticket = LAST_INSERT_ID(ticket + 1) WHERE id = 1 AND ticket >= ?`,
		// A session row, written by the session's own connection.
		SessionStart: `INSERT INTO {p}cosid_lock_session (id, conn_id, confirmed_at, timeout_ms, confirmations)
			VALUES (?, CONNECTION_ID(), {now}, ?, 0)`,
		// The confirmation: only the session's own connection can make
		// it, and only while the row exists (1 row changed).
		SessionConfirm: `UPDATE {p}cosid_lock_session SET confirmed_at = {now}, confirmations = confirmations + 1
			WHERE id = ? AND conn_id = CONNECTION_ID()`,
		// Every session's counter, which the store watches for takeovers.
		Sessions:   `SELECT id, confirmations, timeout_ms FROM {p}cosid_lock_session`,
		SessionEnd: `DELETE FROM {p}cosid_lock_session WHERE id = ?`,
		// Locks the name's row (an upsert's duplicate row is locked
		// exclusively), so that tickets of one name commit in order.
		LockName: `INSERT INTO {p}cosid_lock (name) VALUES (?) ON DUPLICATE KEY UPDATE name = name`,
		// After NewID, under the state row's lock: the seal, and the
		// holder or first waiter of the name, for TryLock.
		EnqueueCheck: `SELECT sealed,
			(SELECT owner FROM {p}cosid_lock_waiter WHERE name = ? ORDER BY ticket LIMIT 1),
			(SELECT ticket FROM {p}cosid_lock_waiter WHERE name = ? ORDER BY ticket LIMIT 1)
			FROM {p}cosid_lock_state WHERE id = 1`,
		Enqueue: `INSERT INTO {p}cosid_lock_waiter (ticket, name, owner, session) VALUES (?, ?, ?, ?)`,
		// One pass: the rows up to ours, with their sessions' counters,
		// and whether ours is refused: sealed, or queued before a seal a
		// raise undid since (unsealed, lockseal.go).
		Pass: `SELECT w.ticket, ` + fenceOf("w.ticket") + `, w.session, s.confirmations, s.timeout_ms,
			(SELECT st.sealed OR st.unsealed >= ? FROM {p}cosid_lock_state st WHERE st.id = 1)
			FROM {p}cosid_lock_waiter w JOIN {p}cosid_lock_session s ON s.id = w.session
			WHERE w.name = ? AND w.ticket <= ? ORDER BY w.ticket`,
		// A takeover deletes a session (its waiter rows go with it) only
		// if its counter is still the one seen standing still.
		Takeover: `DELETE FROM {p}cosid_lock_session WHERE id = ? AND confirmations = ?`,
		// Leaving locks the name's row first, in the same transaction: an
		// enqueue of the ticket still in flight holds it, so the delete
		// waits for its commit instead of missing its row.
		LockNameRow: `SELECT 1 FROM {p}cosid_lock WHERE name = ? FOR UPDATE`,
		Leave:       `DELETE FROM {p}cosid_lock_waiter WHERE ticket = ? AND session = ?`,
		Locks:       `SELECT name FROM {p}cosid_lock`,
		// VARBINARY compares and sorts by bytes already.
		ListLocks: `SELECT name FROM {p}cosid_lock WHERE name > ? ORDER BY name LIMIT ?`,
		LockRow:   `SELECT EXISTS (SELECT 1 FROM {p}cosid_lock WHERE name = ?)`,
		Waiters:   `SELECT owner, ` + fenceOf("ticket") + ` FROM {p}cosid_lock_waiter WHERE name = ? ORDER BY ticket`,

		SealLocks: `UPDATE {p}cosid_lock_state SET sealed = TRUE WHERE id = 1`,
		StateRead: `SELECT ticket, sealed FROM {p}cosid_lock_state WHERE id = 1`,
		StateLock: `SELECT ticket, sealed FROM {p}cosid_lock_state WHERE id = 1 FOR UPDATE`,
		// No assignment reads a column an earlier one set, so the
		// servers' orders of evaluation (MySQL's left to right, MariaDB's
		// SIMULTANEOUS_ASSIGNMENT) agree.
		RaiseLockFences: `UPDATE {p}cosid_lock_state SET unsealed = IF(sealed, ticket, unsealed),
			ticket = GREATEST(ticket, ?), sealed = FALSE WHERE id = 1`,
		// What a raise needs to know whether a waiter's fence is at or
		// below its floor (sqlstore.RaiseShift), and what it records.
		RaiseState: `SELECT COALESCE((SELECT min(ticket) FROM {p}cosid_lock_waiter), 0),
			COALESCE((SELECT CAST(value AS SIGNED) FROM {p}cosid_meta WHERE name = '` + sqlstore.RaisedLast + `'), 0),
			COALESCE((SELECT CAST(value AS SIGNED) FROM {p}cosid_meta WHERE name = '` + sqlstore.RaisedOffset + `'), 0)`,
		RaiseRecord: `INSERT INTO {p}cosid_meta (name, value) VALUES (?, ?) ON DUPLICATE KEY UPDATE value = ?`,
	}
	return st, d.Prepare(st)
}

// newLockPurge writes the purge's statements (sqlstore.PurgeLocks), which
// run through the shared transaction and take $n.
func newLockPurge(d sqlstore.Dialect) (*sqlstore.LockPurge, error) {
	d.Statements = nil
	st := &sqlstore.LockPurge{
		// The purge runs at REPEATABLE READ (the shared PurgeLock comes
		// first): these locking reads keep every row and gap of the lock
		// tables, and the state row every enqueue updates, until it ends.
		// Head and List lock too: a plain read would see the snapshot of
		// the transaction's first plain read, from before the enqueues
		// the Lock waited for committed (the TCK's Interleave/PurgeLock
		// saw a hold deleted).
		Lock: `SELECT st.c + l.c + s.c + w.c FROM
			(SELECT count(*) AS c FROM {p}cosid_lock_state FOR UPDATE) st,
			(SELECT count(*) AS c FROM {p}cosid_lock FOR UPDATE) l,
			(SELECT count(*) AS c FROM {p}cosid_lock_session FOR UPDATE) s,
			(SELECT count(*) AS c FROM {p}cosid_lock_waiter FOR UPDATE) w`,
		Head: `SELECT name, owner, ticket FROM {p}cosid_lock_waiter ORDER BY ticket LIMIT 1 FOR UPDATE`,
		List: `SELECT l.name, w.owner, w.ticket FROM {p}cosid_lock l
			LEFT JOIN {p}cosid_lock_waiter w ON w.name = l.name ORDER BY l.name, w.ticket FOR UPDATE`,
		Delete: []string{`DELETE FROM {p}cosid_lock_waiter`, `DELETE FROM {p}cosid_lock_session`, `DELETE FROM {p}cosid_lock`},
	}
	return st, d.Prepare(st)
}
