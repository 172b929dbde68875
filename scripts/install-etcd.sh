#!/usr/bin/env bash
# Builds the etcd server the etcd driver's tests start (see
# internal/testing/etcdtest) from the Go module proxy, in a scratch
# module, and caches the binary in .etcd/ under the repository root (beside
# .zk/, where scripts/install-zookeeper.sh puts ZooKeeper). Beside it, the
# same version's etcdctl and etcdutl, with which storectl's tests follow the
# documented snapshot backup and restore.
#
#   ETCD_WANT (default v3.7.3) is built; if the proxy cannot give it, the
#   v3.6 fallback (v3.6.16) is.
#
# Then writes .etcd/env (ETCD_BIN=..., ETCDCTL_BIN=..., ETCDUTL_BIN=...),
# which the Go helper reads, and checks that the binary reports its version.
# Safe to run again: it only builds what is missing or another version.
#
# Usage: bash scripts/install-etcd.sh
set -euo pipefail

ETCD_WANT=${ETCD_WANT:-v3.7.3}
ETCD_FALLBACK=v3.6.16

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=$ROOT/.etcd
BIN=$DIR/etcd
CTL=$DIR/etcdctl
UTL=$DIR/etcdutl

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

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
ETCDCTL_BIN=$CTL
ETCDUTL_BIN=$UTL
EOT
	mv "$DIR/env.new" "$DIR/env"
}

mkdir -p "$DIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# tool_version prints the version etcdctl or etcdutl reports, or nothing.
tool_version() {
	[ -x "$1" ] || return 0
	"$1" version 2>/dev/null | sed -n 's/^[a-z]* version: //p' | head -n1
}

# Builds etcdctl and etcdutl of the server's version v when missing or of
# another version.
tools() {
	local v=$1
	[ "v$(tool_version "$CTL")" = "$v" ] && [ "v$(tool_version "$UTL")" = "$v" ] && return 0
	log "building etcdctl and etcdutl $v"
	rm -rf "$tmp/t" && mkdir -p "$tmp/t"
	(
		cd "$tmp/t"
		export GOFLAGS=-mod=mod GOWORK=off
		go mod init scratch/etcdtools >/dev/null 2>&1
		go get "go.etcd.io/etcd/etcdctl/v3@$v" "go.etcd.io/etcd/etcdutl/v3@$v" &&
			go build -trimpath -o "$CTL.new" go.etcd.io/etcd/etcdctl/v3 &&
			go build -trimpath -o "$UTL.new" go.etcd.io/etcd/etcdutl/v3
	) || die "could not build etcdctl and etcdutl $v"
	mv "$CTL.new" "$CTL"
	mv "$UTL.new" "$UTL"
}

have=$(bin_version "$BIN")
if [ -n "$have" ] && { [ "v$have" = "$ETCD_WANT" ] || [ "v$have" = "$ETCD_FALLBACK" ]; }; then
	log "etcd $have already built in ${BIN#"$ROOT"/}"
	tools "v$have"
	write_env
	echo "ETCD_BIN=$BIN"
	exit 0
fi

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
tools "$built"
write_env
echo "ETCD_BIN=$BIN"
