# What the scripts/install-*.sh installers share; sourced, never run:
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   parse_check_args "$@"   # sets check to 1, or 0 with --no-check
#
# Gives log and die (prefixed with the installer's name) and as_root, and
# keeps apt-get from asking questions.

lib_name=$(basename "$0" .sh)

log() { echo "$lib_name: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# Only installing needs root; a machine that has everything needs no sudo.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo DEBIAN_FRONTEND=noninteractive "$@"
	else
		die "run as root: '$*' needs it"
	fi
}
export DEBIAN_FRONTEND=noninteractive

# The installers' one option: --no-check skips the smoke check that the
# installed server (or browser) starts.
parse_check_args() {
	check=1
	local arg
	for arg in "$@"; do
		case $arg in
		--no-check) check=0 ;;
		*)
			echo "usage: $0 [--no-check]" >&2
			exit 2
			;;
		esac
	done
}
