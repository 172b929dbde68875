#!/usr/bin/env bash
# Installs the PostgreSQL server the tests start (see internal/testing/pgtest):
# Debian's `postgresql` package (PostgreSQL 15 on Debian 12), when its
# binaries are missing. The tests never use the system's service or cluster:
# each test binary runs its own server, as the `postgres` user, in a
# temporary directory, on a free loopback port.
#
# Then checks that a throwaway server initialises, starts and answers.
# Safe to run again: it only installs what is missing. Needs root (or sudo)
# for apt-get.
#
# Usage: bash scripts/install-postgres.sh [--no-check]
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
parse_check_args "$@"

# bindir prints the newest installed server's bin directory, if any.
bindir() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	if [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/postgres" ]; then
		echo "$d"
	fi
}

BIN=$(bindir)
if [ -z "$BIN" ]; then
	log "PostgreSQL is missing: installing Debian's postgresql package"
	as_root apt-get update
	as_root apt-get install -y postgresql
	BIN=$(bindir)
	[ -n "$BIN" ] || die "apt-get installed postgresql but no /usr/lib/postgresql/*/bin/initdb exists"
fi
log "using $BIN ($("$BIN/postgres" --version))"

[ $check = 1 ] || exit 0

# --- smoke check: a throwaway cluster, started and stopped here ------------
# The server refuses to run as root, so as root it runs as `postgres`.
run() { "$@"; }
if [ "$(id -u)" -eq 0 ]; then
	id postgres >/dev/null 2>&1 || die "no postgres user (the package creates it)"
	run() { runuser -u postgres -- "$@"; }
fi
tmp=$(mktemp -d /tmp/cosid-pgcheck.XXXXXX)
if [ "$(id -u)" -eq 0 ]; then chown postgres: "$tmp"; fi
stop() {
	run "$BIN/pg_ctl" -D "$tmp/data" -m immediate stop >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap stop EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 20000)))
run "$BIN/initdb" -D "$tmp/data" -U postgres -A trust --no-sync >"$tmp/initdb.log" 2>&1 ||
	die "initdb failed: $(tail -n 5 "$tmp/initdb.log")"
run "$BIN/pg_ctl" -D "$tmp/data" -l "$tmp/server.log" -w -t 60 \
	-o "-c listen_addresses=127.0.0.1 -p $port -k $tmp -c fsync=off" start >/dev/null ||
	die "the server did not start: $(tail -n 5 "$tmp/server.log")"
got=$(run "$BIN/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -Atc 'SELECT 1') ||
	die "the server does not answer"
[ "$got" = 1 ] || die "SELECT 1 answered $got"
log "ok: a test server starts and answers"
