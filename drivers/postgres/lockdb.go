package postgres

// The lock tables and statements. A session is one store's lock session:
// its own connection, which confirms the row every T/3 (T = lockTimeout).
// A waiter row belongs to a session and is deleted with it. The holder of
// a name is its lowest ticket among rows of sessions not expired; tickets
// come from one sequence and are the fences.
var lockTables = []string{
	`CREATE SEQUENCE IF NOT EXISTS {p}cosid_lock_ticket`,
	`CREATE TABLE IF NOT EXISTS {p}cosid_lock (name TEXT PRIMARY KEY)`,
	`CREATE TABLE IF NOT EXISTS {p}cosid_lock_session (
		id BIGINT PRIMARY KEY,
		pid INT NOT NULL,
		confirmed_at BIGINT NOT NULL,
		timeout_ms BIGINT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS {p}cosid_lock_waiter (
		ticket BIGINT PRIMARY KEY,
		name TEXT NOT NULL,
		owner TEXT NOT NULL,
		session BIGINT NOT NULL REFERENCES {p}cosid_lock_session (id) ON DELETE CASCADE)`,
	`CREATE INDEX IF NOT EXISTS cosid_lock_waiter_name ON {p}cosid_lock_waiter (name, ticket)`,
	`CREATE INDEX IF NOT EXISTS cosid_lock_waiter_session ON {p}cosid_lock_waiter (session)`,
}

const (
	// A session row, written by the session's own connection.
	qSessionStart = `INSERT INTO {p}cosid_lock_session (id, pid, confirmed_at, timeout_ms)
		VALUES (nextval('{p}cosid_lock_ticket'), pg_backend_pid(), {now}, $1) RETURNING id`
	// The confirmation: only the session's own backend can make it, and
	// only while the row exists.
	qSessionConfirm = `UPDATE {p}cosid_lock_session SET confirmed_at = {now}
		WHERE id = $1 AND pid = pg_backend_pid()`
	// Leaving and ending a session first lock the names they change (in
	// the same implicit transaction, a batch), so that two leaving at once
	// run one after the other and the second sees the first's delete: else
	// each could wake the other, both leaving, and the real next head sleep.
	qLockNameRow  = `SELECT 1 FROM {p}cosid_lock WHERE name = $1 FOR UPDATE`
	qLockSessions = `SELECT 1 FROM {p}cosid_lock WHERE name IN
		(SELECT name FROM {p}cosid_lock_waiter WHERE session = $1) ORDER BY name FOR UPDATE`
	// Ending a session deletes its rows and wakes the new head of each name.
	qSessionEnd = `WITH d AS (DELETE FROM {p}cosid_lock_waiter WHERE session = $1 RETURNING name),
		n AS (SELECT DISTINCT name FROM d),
		x AS (DELETE FROM {p}cosid_lock_session WHERE id = $1)
		SELECT pg_notify($2, coalesce((SELECT min(w.ticket) FROM {p}cosid_lock_waiter w
			WHERE w.name = n.name AND w.session <> $1)::text, '0')) FROM n`
	// Locks the name's row, so that tickets of one name commit in order.
	qLockName = `INSERT INTO {p}cosid_lock AS l (name) VALUES ($1)
		ON CONFLICT (name) DO UPDATE SET name = l.name`
	// The live holder or first waiter of a name, for TryLock.
	qLockHead = `SELECT w.owner, w.ticket FROM {p}cosid_lock_waiter w JOIN {p}cosid_lock_session s ON s.id = w.session
		WHERE w.name = $1 AND s.confirmed_at + s.timeout_ms > {now} ORDER BY w.ticket LIMIT 1`
	qEnqueue = `INSERT INTO {p}cosid_lock_waiter (ticket, name, owner, session)
		VALUES (nextval('{p}cosid_lock_ticket'), $1, $2, $3) RETURNING ticket`
	// One pass: delete expired sessions (with their rows), then list the
	// rows up to ours with how long each one's session has left (ms).
	qPass = `WITH gone AS (DELETE FROM {p}cosid_lock_session WHERE confirmed_at + timeout_ms <= {now} RETURNING id)
		SELECT w.ticket, s.confirmed_at + s.timeout_ms - {now}
		FROM {p}cosid_lock_waiter w JOIN {p}cosid_lock_session s ON s.id = w.session
		WHERE w.name = $1 AND w.ticket <= $2 AND w.session NOT IN (SELECT id FROM gone)
		ORDER BY w.ticket`
	// Leaving (unlock or a cancelled wait) wakes the next head only.
	qLeave = `WITH d AS (DELETE FROM {p}cosid_lock_waiter WHERE ticket = $1 AND session = $2 RETURNING name)
		SELECT pg_notify($3, coalesce((SELECT min(w.ticket) FROM {p}cosid_lock_waiter w
			WHERE w.name = d.name AND w.ticket <> $1)::text, '0')) FROM d`
	qLocks   = `SELECT name FROM {p}cosid_lock`
	qLockRow = `SELECT EXISTS (SELECT 1 FROM {p}cosid_lock WHERE name = $1)`
	qWaiters = `SELECT w.owner, w.ticket FROM {p}cosid_lock_waiter w JOIN {p}cosid_lock_session s ON s.id = w.session
		WHERE w.name = $1 AND s.confirmed_at + s.timeout_ms > {now} ORDER BY w.ticket`
)
