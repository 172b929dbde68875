#!/usr/bin/env bash
# Installs the headless browser the status page's browser test drives
# (storehttp/browser): Debian's `chromium` package, when no chromium is on
# the PATH. Then checks that it starts headless and renders a page.
# Safe to run again: it only installs what is missing. Needs root (or sudo)
# for apt-get.
#
# Usage: bash scripts/install-chromium.sh [--no-check]
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
parse_check_args "$@"

if ! command -v chromium >/dev/null; then
	log "chromium is missing: installing Debian's chromium package"
	as_root apt-get update
	# Fonts so that the page's text renders in screenshots.
	as_root apt-get install -y --no-install-recommends chromium fonts-dejavu-core
	command -v chromium >/dev/null || die "apt-get installed chromium but no chromium is on the PATH"
fi
log "using $(command -v chromium) ($(chromium --version 2>/dev/null || echo 'version unknown'))"

[ $check = 1 ] || exit 0

# --- smoke check: dump a one-line page headless ---------------------------
# As root, Chromium needs --no-sandbox (the browser test passes it too).
tmp=$(mktemp -d /tmp/cosid-chromium.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo '<p id=x>cosid-ok</p>' >"$tmp/page.html"
out=$(timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
	--user-data-dir="$tmp/profile" --dump-dom "file://$tmp/page.html" 2>"$tmp/err.log") ||
	die "chromium did not start headless: $(tail -n 5 "$tmp/err.log")"
case $out in
*cosid-ok*) log "ok: chromium starts headless and renders a page" ;;
*) die "chromium rendered no page: $(tail -n 5 "$tmp/err.log")" ;;
esac
