package postgres

import (
	"fmt"

	"github.com/cosid-go/store/internal/sqlstore"
)

// The lock tables and statements. A session is one store's lock session:
// its own connection, which confirms the row every T/3 (T = lockTimeout),
// adding one to its confirmations. A waiter row belongs to a session and is
// deleted with it. The holder of a name is its lowest ticket; tickets come
// from one sequence and are the fences. Another store deletes a session
// only after it has seen its confirmations stand still for the session's
// T on its own monotonic clock (sqlstore.Observations), never by comparing
// database times, so no clock step makes two holders. confirmed_at is
// kept for operators only.
var lockTables = []string{
	`CREATE SEQUENCE IF NOT EXISTS {p}cosid_lock_ticket`,
	`CREATE TABLE IF NOT EXISTS {p}cosid_lock (name TEXT PRIMARY KEY)`,
	`CREATE TABLE IF NOT EXISTS {p}cosid_lock_session (
		id BIGINT PRIMARY KEY,
		pid INT NOT NULL,
		confirmed_at BIGINT NOT NULL,
		timeout_ms BIGINT NOT NULL)`,
	// Added after the first release: tables made before have no counter.
	ifMissing(`SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('{p}cosid_lock_session')
		AND attname = 'confirmations' AND NOT attisdropped`,
		`ALTER TABLE {p}cosid_lock_session ADD COLUMN IF NOT EXISTS confirmations BIGINT NOT NULL DEFAULT 0`),
	`CREATE TABLE IF NOT EXISTS {p}cosid_lock_waiter (
		ticket BIGINT PRIMARY KEY,
		name TEXT NOT NULL,
		owner TEXT NOT NULL,
		session BIGINT NOT NULL REFERENCES {p}cosid_lock_session (id) ON DELETE CASCADE)`,
	indexIfMissing(`cosid_lock_waiter_name`, `{p}cosid_lock_waiter (name, ticket)`),
	indexIfMissing(`cosid_lock_waiter_session`, `{p}cosid_lock_waiter (session)`),
	// The listings' keyset pages compare and sort bytewise (COLLATE "C",
	// Dialect.Bytewise); the primary keys are in the database's collation,
	// which an index scan in "C" order cannot use: without these a page
	// of 100,000 keys sorted them all (0.1 s a page).
	indexIfMissing(`cosid_range_bytewise`, `{p}cosid_range (key COLLATE "C")`),
	indexIfMissing(`cosid_lock_bytewise`, `{p}cosid_lock (name COLLATE "C")`),
}

// ifMissing runs ddl only when query finds no row. A store's open runs
// the setup statements in one transaction; a CREATE INDEX or ALTER TABLE
// locks its table (SHARE, ACCESS EXCLUSIVE) even when there is nothing to
// do, and those came in the order session, waiter, lock table, the reverse
// of an enqueue's (lock row, waiter row, its session by the foreign key):
// a store opening beside others' Lock and Unlock made a deadlock, which
// the server could end by aborting the Unlock. Done already, the setup
// now takes no lock on the lock tables at all.
func ifMissing(query, ddl string) string {
	return "DO $$ BEGIN IF NOT EXISTS (" + query + ") THEN " + ddl + "; END IF; END $$"
}

// indexIfMissing creates index name on the table and columns of on
// (ifMissing): an index lives in its table's schema.
func indexIfMissing(name, on string) string {
	return ifMissing("SELECT 1 WHERE to_regclass('{p}"+name+"') IS NOT NULL",
		"CREATE INDEX IF NOT EXISTS "+name+" ON "+on)
}

// nextAbove is the ticket sequence's next value, which tickets and session
// ids come from, if the last one given is at least $n, the highest this
// store was given or saw; else NULL, the sequence left as it is: it went
// back (a restored backup), and the values between are left unused until
// the fences are raised, however often the store tries meanwhile (a try
// that took one each time would soon reach values handed out before the
// restore that this store never saw).
func nextAbove(n int) string {
	return fmt.Sprintf(`CASE WHEN (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END
		FROM {p}cosid_lock_ticket) >= $%d::bigint THEN nextval('{p}cosid_lock_ticket') END`, n)
}

// fenceOf is the fence of ticket column col: the ticket, plus the raise's
// offset if at or below the last ticket of that raise
// (sqlstore.RaisedFence).
func fenceOf(col string) string {
	return `CASE WHEN ` + col + ` <= COALESCE((SELECT value::bigint FROM {p}cosid_meta WHERE name = '` + sqlstore.RaisedLast + `'), 0)
		THEN ` + col + ` + COALESCE((SELECT value::bigint FROM {p}cosid_meta WHERE name = '` + sqlstore.RaisedOffset + `'), 0)
		ELSE ` + col + ` END`
}

// lockStatements are the lock code's statements, written for the
// store's dialect once when it opens (Dialect.Prepare checks each is set).
type lockStatements struct {
	SessionStart, SessionConfirm, LockNameRow, LockSessions, SessionEnd string
	LockName, NewName, LockHead, Enqueue, Pass, Takeover, Leave         string
	Locks, LockRow, Waiters                                             string
	ListLocks                                                           string // a keyset page of names
	PurgeLockTables, PurgeHead, PurgeList                               string
	PurgeDelete                                                         []string
	// lockseal.go
	LocksSealed, SealLocks, SealWake, TicketLast, RaiseTicket, Unseal string
	MarkUnsealed, RaiseState, RaiseRecord                             string
}

func newLockStatements(d sqlstore.Dialect) (*lockStatements, error) {
	st := &lockStatements{
		// A session row, written by the session's own connection.
		// No row when the sequence went back (nextAbove).
		SessionStart: `WITH n AS MATERIALIZED (SELECT ` + nextAbove(2) + ` AS id)
		INSERT INTO {p}cosid_lock_session (id, pid, confirmed_at, timeout_ms)
		SELECT id, pg_backend_pid(), {now}, $1 FROM n WHERE id IS NOT NULL RETURNING id`,
		// The confirmation: only the session's own backend can make it, and
		// only while the row exists. It also reads every session's counter
		// (as they were before it), which the store watches for takeovers; the
		// last column says whether the row was confirmed.
		SessionConfirm: `WITH u AS (UPDATE {p}cosid_lock_session SET confirmed_at = {now}, confirmations = confirmations + 1
		WHERE id = $1 AND pid = pg_backend_pid() RETURNING id)
		SELECT s.id, s.confirmations, s.timeout_ms, (SELECT count(*) FROM u) FROM {p}cosid_lock_session s`,
		// Leaving and ending a session first lock the names they change (in
		// the same implicit transaction, a batch), so that two leaving at once
		// run one after the other and the second sees the first's delete: else
		// each could wake the other, both leaving, and the real next head sleep.
		LockNameRow: `SELECT 1 FROM {p}cosid_lock WHERE name = $1 FOR UPDATE`,
		LockSessions: `SELECT 1 FROM {p}cosid_lock WHERE name IN
		(SELECT name FROM {p}cosid_lock_waiter WHERE session = $1) ORDER BY name FOR UPDATE`,
		// Ending a session deletes its rows and wakes the new head of each
		// name, on the channel of the head's session only (session.go).
		SessionEnd: `WITH d AS (DELETE FROM {p}cosid_lock_waiter WHERE session = $1 RETURNING name),
		n AS (SELECT DISTINCT name FROM d),
		x AS (DELETE FROM {p}cosid_lock_session WHERE id = $1)
		SELECT (SELECT pg_notify($2 || '_' || w.session::text, w.ticket::text) FROM {p}cosid_lock_waiter w
			WHERE w.name = n.name AND w.session <> $1 ORDER BY w.ticket LIMIT 1) FROM n`,
		// Locks the name's row, so that tickets of one name commit in order,
		// and takes the ticket while holding it: the ticket is known before
		// the waiter row is written, so a Lock whose commit has an unknown
		// outcome can remove its row. The row must be a committed one (no
		// row: NewName first): a removal's FOR UPDATE waits for the lock of
		// a committed row, and does not see a row another transaction has
		// inserted and not committed, so it would neither wait for that
		// enqueue nor find its waiter row.
		LockName: `UPDATE {p}cosid_lock SET name = name WHERE name = $1 RETURNING ` + nextAbove(2),
		// A name's first use: its row, committed on its own before LockName.
		NewName: `INSERT INTO {p}cosid_lock (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`,
		// The holder or first waiter of a name, for TryLock.
		LockHead: `SELECT owner, ticket FROM {p}cosid_lock_waiter WHERE name = $1 ORDER BY ticket LIMIT 1`,
		Enqueue:  `INSERT INTO {p}cosid_lock_waiter (ticket, name, owner, session) VALUES ($1, $2, $3, $4)`,
		// One pass: the rows up to ours, with their sessions' counters,
		// and whether ours is refused: sealed, or queued before a seal
		// a raise undid since (locks_unsealed, lockseal.go).
		Pass: `SELECT w.ticket, ` + fenceOf("w.ticket") + `, w.session, s.confirmations, s.timeout_ms,
			EXISTS (SELECT 1 FROM {p}cosid_meta WHERE name = 'locks_sealed'
				OR (name = 'locks_unsealed' AND value::bigint >= $2))
		FROM {p}cosid_lock_waiter w JOIN {p}cosid_lock_session s ON s.id = w.session
		WHERE w.name = $1 AND w.ticket <= $2 ORDER BY w.ticket`,
		// A takeover deletes a session (its waiter rows go with it) only if its
		// counter is still the one seen standing still, and wakes the new head
		// of each name it had rows in. LockSessions comes first, as for an end.
		Takeover: `WITH x AS (DELETE FROM {p}cosid_lock_session WHERE id = $1 AND confirmations = $2 RETURNING id),
		n AS (SELECT DISTINCT name FROM {p}cosid_lock_waiter WHERE session = $1)
		SELECT (SELECT pg_notify($3 || '_' || w.session::text, w.ticket::text) FROM {p}cosid_lock_waiter w
			WHERE w.name = n.name AND w.session <> $1 ORDER BY w.ticket LIMIT 1) FROM n WHERE EXISTS (SELECT 1 FROM x)`,
		// Leaving (unlock or a cancelled wait) wakes the next head only, on
		// its session's channel; one row per row deleted (leave counts them).
		Leave: `WITH d AS (DELETE FROM {p}cosid_lock_waiter WHERE ticket = $1 AND session = $2 RETURNING name)
		SELECT (SELECT pg_notify($3 || '_' || w.session::text, w.ticket::text) FROM {p}cosid_lock_waiter w
			WHERE w.name = d.name AND w.ticket <> $1 ORDER BY w.ticket LIMIT 1) FROM d`,
		Locks: `SELECT name FROM {p}cosid_lock`,
		ListLocks: `SELECT name FROM {p}cosid_lock WHERE name{bytewise} > $1
			ORDER BY name{bytewise} LIMIT $2`,
		LockRow: `SELECT EXISTS (SELECT 1 FROM {p}cosid_lock WHERE name = $1)`,
		Waiters: `SELECT owner, ` + fenceOf("ticket") + ` FROM {p}cosid_lock_waiter WHERE name = $1 ORDER BY ticket`,
		// Purge locks the tables first, so no row written meanwhile
		// escapes its check of the waiters.
		PurgeLockTables: `LOCK TABLE {p}cosid_lock, {p}cosid_lock_session, {p}cosid_lock_waiter IN SHARE ROW EXCLUSIVE MODE`,
		PurgeHead:       `SELECT name, owner, ticket FROM {p}cosid_lock_waiter ORDER BY ticket LIMIT 1`,
		PurgeList: `SELECT l.name, w.owner, w.ticket FROM {p}cosid_lock l
			LEFT JOIN {p}cosid_lock_waiter w ON w.name = l.name ORDER BY l.name, w.ticket`,
		// The seal is a row of cosid_meta, which a purge keeps. Sealing
		// and raising lock cosid_lock first, which every enqueue writes
		// before it takes its ticket: none is in flight meanwhile.
		LocksSealed: `SELECT EXISTS (SELECT 1 FROM {p}cosid_meta WHERE name = 'locks_sealed')`,
		SealLocks: `INSERT INTO {p}cosid_meta (name, value) VALUES ('locks_sealed', 'true')
		ON CONFLICT (name) DO NOTHING`,
		SealWake:    `SELECT pg_notify($1 || '_' || session::text, ticket::text) FROM {p}cosid_lock_waiter`,
		TicketLast:  `SELECT last_value FROM {p}cosid_lock_ticket`,
		RaiseTicket: `SELECT setval('{p}cosid_lock_ticket', $1)`,
		Unseal:      `DELETE FROM {p}cosid_meta WHERE name = 'locks_sealed'`,
		MarkUnsealed: `INSERT INTO {p}cosid_meta (name, value)
		SELECT 'locks_unsealed', $1::bigint::text WHERE EXISTS (SELECT 1 FROM {p}cosid_meta WHERE name = 'locks_sealed')
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
		// What a raise needs to know whether a waiter's fence is at or
		// below its floor (sqlstore.RaiseShift), and what it records.
		RaiseState: `SELECT COALESCE((SELECT min(ticket) FROM {p}cosid_lock_waiter), 0),
			COALESCE((SELECT value::bigint FROM {p}cosid_meta WHERE name = '` + sqlstore.RaisedLast + `'), 0),
			COALESCE((SELECT value::bigint FROM {p}cosid_meta WHERE name = '` + sqlstore.RaisedOffset + `'), 0)`,
		RaiseRecord: `INSERT INTO {p}cosid_meta (name, value)
			VALUES ('` + sqlstore.RaisedLast + `', $1::bigint::text), ('` + sqlstore.RaisedOffset + `', $2::bigint::text)
			ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
		PurgeDelete: []string{`DELETE FROM {p}cosid_lock_waiter`, `DELETE FROM {p}cosid_lock_session`, `DELETE FROM {p}cosid_lock`},
	}
	return st, d.Prepare(st)
}
