#!/usr/bin/env bash
# Installs the MariaDB server the MySQL driver's tests start (see
# internal/mysqltest): Debian's `mariadb-server` package (MariaDB 10.11 on
# Debian 12), when mariadbd or mariadb-install-db is missing. The tests
# never use the system's service or data directory: each test binary
# initialises its own data directory (mariadb-install-db) in a temporary
# directory and runs mariadbd on a free loopback port and its own socket.
# If the package started the system service, it is stopped and disabled.
#
# Then checks that a throwaway server initialises, starts and answers.
# Safe to run again: it only installs what is missing. Needs root (or sudo)
# for apt-get.
#
# Usage: bash scripts/install-mariadb.sh [--no-check]
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
parse_check_args "$@"

have() { command -v mariadbd >/dev/null && command -v mariadb-install-db >/dev/null; }
# mariadbd lives in /usr/sbin, which a non-root PATH may lack.
export PATH="$PATH:/usr/sbin:/usr/local/sbin"

if ! have; then
	log "MariaDB is missing: installing Debian's mariadb-server package"
	as_root apt-get update
	# policy-rc.d 101 keeps the package's scripts from starting the system
	# service; it is removed again whatever happens.
	policy=/usr/sbin/policy-rc.d
	own_policy=0
	if [ ! -e "$policy" ]; then
		as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy"
		own_policy=1
	fi
	status=0
	as_root apt-get install -y mariadb-server mariadb-client || status=$?
	if [ $own_policy = 1 ]; then as_root rm -f "$policy"; fi
	[ $status = 0 ] || die "apt-get install mariadb-server failed"
	have || die "apt-get installed mariadb-server but mariadbd or mariadb-install-db is missing"
fi

# The tests never use the system service: stop it if something started it,
# and keep it from starting at boot.
if command -v systemctl >/dev/null && systemctl is-active --quiet mariadb 2>/dev/null; then
	log "stopping and disabling the system mariadb service (the tests run their own servers)"
	as_root systemctl disable --now mariadb || true
elif [ -x /etc/init.d/mariadb ] && /etc/init.d/mariadb status >/dev/null 2>&1; then
	log "stopping the system mariadb service (the tests run their own servers)"
	as_root /etc/init.d/mariadb stop || true
	if command -v update-rc.d >/dev/null; then as_root update-rc.d mariadb disable >/dev/null 2>&1 || true; fi
fi
log "using $(command -v mariadbd) ($(mariadbd --version))"

[ $check = 1 ] || exit 0

# --- smoke check: a throwaway server, started and stopped here -------------
tmp=$(mktemp -d /tmp/cosid-mariadbcheck.XXXXXX)
pid=
stop() {
	if [ -n "$pid" ]; then kill -9 "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap stop EXIT
user=$(id -un)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 20000)))
mariadb-install-db --no-defaults --datadir="$tmp/data" --user="$user" --auth-root-authentication-method=normal \
	--skip-test-db >"$tmp/install.log" 2>&1 || die "mariadb-install-db failed: $(tail -n 5 "$tmp/install.log")"
mariadbd --no-defaults --datadir="$tmp/data" --user="$user" --bind-address=127.0.0.1 --port="$port" \
	--socket="$tmp/mysqld.sock" --pid-file="$tmp/mysqld.pid" --skip-log-bin --innodb-flush-log-at-trx-commit=0 \
	>"$tmp/server.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
	if got=$(mariadb --no-defaults -uroot -h127.0.0.1 -P"$port" -N -e 'SELECT 1' 2>/dev/null); then break; fi
	kill -0 "$pid" 2>/dev/null || die "the server exited: $(tail -n 5 "$tmp/server.log")"
	sleep 0.1
done
[ "${got:-}" = 1 ] || die "the server does not answer: $(tail -n 5 "$tmp/server.log")"
log "ok: a test server starts and answers"
