#!/usr/bin/env bash
# Builds the etcd server the etcd driver's tests start (see
# internal/testing/etcdtest) from the Go module proxy, in a scratch
# module, and caches the binary in .etcd/ under the repository root (beside
# .zk/, where scripts/install-zookeeper.sh puts ZooKeeper).
#
#   ETCD_WANT (default v3.7.3) is built; if the proxy cannot give it, the
#   v3.6 fallback (v3.6.16) is.
#
# Then writes .etcd/env (ETCD_BIN=...), which the Go helper reads, and checks
# that the binary reports its version. Safe to run again: it only builds when
# the binary is missing or is another version.
#
# Usage: bash scripts/install-etcd.sh
set -euo pipefail

ETCD_WANT=${ETCD_WANT:-v3.7.3}
ETCD_FALLBACK=v3.6.16

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=$ROOT/.etcd
BIN=$DIR/etcd

log() { echo "install-etcd: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}

command -v go >/dev/null || die "go not found on PATH"

# Prints the version the binary reports ("3.7.3"), or nothing.
bin_version() {
	[ -x "$1" ] || return 0
	"$1" --version 2>/dev/null | sed -n 's/^etcd Version: //p' | head -n1
}

write_env() {
	cat >"$DIR/env.new" <<EOT
# Written by scripts/install-etcd.sh; read by internal/testing/etcdtest.
ETCD_BIN=$BIN
EOT
	mv "$DIR/env.new" "$DIR/env"
}

have=$(bin_version "$BIN")
if [ -n "$have" ] && { [ "v$have" = "$ETCD_WANT" ] || [ "v$have" = "$ETCD_FALLBACK" ]; }; then
	log "etcd $have already built in ${BIN#"$ROOT"/}"
	write_env
	echo "ETCD_BIN=$BIN"
	exit 0
fi

mkdir -p "$DIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A scratch module outside the repository: the server's many dependencies
# never reach the store's go.mod.
build() {
	local v=$1
	rm -rf "$tmp/m" && mkdir -p "$tmp/m"
	(
		cd "$tmp/m"
		export GOFLAGS=-mod=mod GOWORK=off
		go mod init scratch/etcd >/dev/null 2>&1
		go get "go.etcd.io/etcd/server/v3@$v" &&
			go build -trimpath -o "$BIN.new" go.etcd.io/etcd/server/v3
	)
}

built=
for v in "$ETCD_WANT" "$ETCD_FALLBACK"; do
	log "building etcd server $v (takes minutes)"
	if build "$v"; then
		built=$v
		break
	fi
	log "building $v failed"
done
[ -n "$built" ] || die "could not build the etcd server ($ETCD_WANT nor $ETCD_FALLBACK)"
mv "$BIN.new" "$BIN"

got=$(bin_version "$BIN")
[ "v$got" = "$built" ] || die "${BIN#"$ROOT"/} reports version '$got', expected $built"
log "etcd $got built into ${BIN#"$ROOT"/}"
write_env
echo "ETCD_BIN=$BIN"
