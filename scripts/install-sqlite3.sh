#!/usr/bin/env bash
# Installs the sqlite3 shell (Debian's `sqlite3` package) when it is
# missing: the partial restore of docs/operations.md tells a SQLite
# operator to run it, and cmd/storectl's test follows that as written.
# The driver itself needs no SQLite library (modernc.org/sqlite).
# Safe to run again: it only installs what is missing. Needs root (or sudo)
# for apt-get.
#
# Usage: bash scripts/install-sqlite3.sh [--no-check]
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
parse_check_args "$@"

if ! command -v sqlite3 >/dev/null; then
	log "sqlite3 is missing: installing Debian's sqlite3 package"
	as_root apt-get update
	as_root apt-get install -y --no-install-recommends sqlite3
	command -v sqlite3 >/dev/null || die "apt-get installed sqlite3 but no sqlite3 is on the PATH"
fi
log "using $(command -v sqlite3) ($(sqlite3 --version))"

[ $check = 1 ] || exit 0
got=$(sqlite3 :memory: 'SELECT 40 + 2') || die "sqlite3 does not run a query"
[ "$got" = 42 ] || die "sqlite3 answered $got to SELECT 40 + 2"
log "ok: sqlite3 runs a query"
