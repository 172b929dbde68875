#!/usr/bin/env bash
# Installs the ZooKeeper servers the tests start (see internal/testing/zktest):
#
#   3.8.0  Debian 12's `zookeeper` package (jars in /usr/share/java).
#   3.9.3  Debian 13 (trixie)'s `libzookeeper-java`, downloaded with apt-get
#          download and unpacked into .zk/3.9/ under the repository root. It is
#          never installed: it runs on the 3.8 package's dependency jars.
#
# Then writes .zk/env with one classpath per version, which the Go helper
# reads, and checks that each version starts and reports the expected version
# through the `srvr` four-letter word.
#
# Safe to run again: it only does what is missing. Needs root (or sudo) for
# apt-get install. The system's apt configuration is left untouched: trixie is
# read through a temporary sources list and lists directory.
#
# Usage: bash scripts/install-zookeeper.sh [--no-check]
#   COSID_DEBIAN_MIRROR=URI  overrides the mirror read from the apt sources.
set -euo pipefail

ZK39_WANT=3.9.3
ZK38_WANT=3.8.0

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ZKDIR=$ROOT/.zk
ZK39_DIR=$ZKDIR/3.9
JAVA_DIR=/usr/share/java

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
parse_check_args "$@"

# The jars the zookeeper jar's manifest names (jline is only used by the CLI
# and is absent here), plus slf4j-simple so the server logs to stderr, which
# the Go helper captures into a per-server log file, and netty-codec, which
# the TLS client port (NettyServerCnxnFactory's SslHandler) needs.
DEPS=(
	commons-cli commons-io findbugs-annotations
	jackson-annotations jackson-core jackson-databind
	jetty9-client jetty9-http jetty9-io jetty9-security jetty9-server
	jetty9-servlet jetty9-util
	metrics-core
	netty-buffer netty-codec netty-common netty-handler netty-transport
	netty-transport-native-epoll
	snappy-java slf4j-api slf4j-simple
)

# --- 3.8: the system package -------------------------------------------------

have_zk38() {
	[ "$(dpkg-query -W -f='${Status}' zookeeper 2>/dev/null)" = "install ok installed" ] &&
		[ -f $JAVA_DIR/zookeeper.jar ] && [ -f $JAVA_DIR/zookeeper-jute.jar ]
}

if have_zk38; then
	log "zookeeper $(dpkg-query -W -f='${Version}' zookeeper) already installed"
else
	# Update the lists first only when apt knows nothing of the package (a
	# fresh image); if the install then fails on stale lists, update and retry.
	if ! apt-cache show zookeeper >/dev/null 2>&1; then
		as_root apt-get update
	fi
	if ! as_root apt-get install -y --no-install-recommends zookeeper; then
		as_root apt-get update
		as_root apt-get install -y --no-install-recommends zookeeper
	fi
	have_zk38 || die "zookeeper installed but $JAVA_DIR/zookeeper.jar is missing"
fi
v38=$(dpkg-query -W -f='${Version}' libzookeeper-java)
case $v38 in
"$ZK38_WANT"-*) ;;
*) die "libzookeeper-java is $v38, expected $ZK38_WANT" ;;
esac
for d in "${DEPS[@]}"; do
	[ -f "$JAVA_DIR/$d.jar" ] || die "$JAVA_DIR/$d.jar is missing (a dependency of zookeeper)"
done

# --- 3.9: trixie's jars, unpacked locally -------------------------------------

# Only the server jar matches: the others are named zookeeper-<part>-3.9.x.jar.
zk39_jar() { compgen -G "$ZK39_DIR/usr/share/java/zookeeper-3.9.*.jar" | head -n1 || true; }

# Prints the first URI of the system's Debian archive: the sources entry
# whose suite is this release's codename (so not security, not third-party).
system_mirror() {
	local codename f
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	[ -n "$codename" ] || return 0
	for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list \
		/etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		case $f in
		*.sources)
			# deb822: blank-line separated stanzas of "Field: value".
			awk -v want="$codename" '
				function flush() {
					if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " want " ") && enabled != "no" && uris != "") {
						split(uris, u, " "); print u[1]; found = 1; exit
					}
					types = ""; suites = ""; uris = ""; enabled = ""
				}
				/^[ \t]*$/ { flush(); next }
				/^[ \t]*#/ { next }
				tolower($1) == "types:"   { $1 = ""; types = $0 }
				tolower($1) == "suites:"  { $1 = ""; suites = $0 }
				tolower($1) == "uris:"    { $1 = ""; uris = $0 }
				tolower($1) == "enabled:" { enabled = tolower($2) }
				END { if (!found) flush() }
			' "$f" | sed 's/^ *//' | head -n1
			;;
		*)
			# One-line format: deb [options] URI suite components...
			sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" |
				awk -v want="$codename" '$1 == "deb" && $3 == want { print $2; exit }'
			;;
		esac | grep . && return 0
	done
	return 0
}

if [ -n "$(zk39_jar)" ]; then
	log "zookeeper 3.9 already unpacked in ${ZK39_DIR#"$ROOT"/}"
else
	mirror=${COSID_DEBIAN_MIRROR:-$(system_mirror)}
	[ -n "$mirror" ] || die "cannot find the Debian mirror in /etc/apt/sources*; set COSID_DEBIAN_MIRROR"
	log "fetching libzookeeper-java from $mirror trixie"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	mkdir -p "$tmp/lists/partial" "$tmp/deb"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg target=Packages] $mirror trixie main" >"$tmp/sources.list"
	# Private sources list and lists dir: the system's apt state never sees
	# trixie. Sandbox::User=root because the temp dir is private to root.
	apt_tmp=(
		-o "Dir::Etc::sourcelist=$tmp/sources.list"
		-o "Dir::Etc::sourceparts=-"
		-o "Dir::State::Lists=$tmp/lists"
		-o "Dir::Cache::pkgcache="
		-o "Dir::Cache::srcpkgcache="
		-o "Acquire::Languages=none"
		-o "APT::Sandbox::User=$(id -un)"
	)
	apt-get "${apt_tmp[@]}" update
	cand=$(apt-cache "${apt_tmp[@]}" policy libzookeeper-java | awk '$1 == "Candidate:" { print $2 }')
	case $cand in
	"$ZK39_WANT"-*) ;;
	*) die "trixie offers libzookeeper-java '$cand', expected $ZK39_WANT" ;;
	esac
	(cd "$tmp/deb" && apt-get "${apt_tmp[@]}" download "libzookeeper-java=$cand")
	mkdir -p "$ZKDIR"
	rm -rf "$ZK39_DIR.new"
	dpkg -x "$tmp"/deb/libzookeeper-java_*.deb "$ZK39_DIR.new"
	# Swap in whole so an interrupted run never leaves a half-unpacked tree.
	rm -rf "$ZK39_DIR"
	mv "$ZK39_DIR.new" "$ZK39_DIR"
	[ -n "$(zk39_jar)" ] || die "the package did not contain zookeeper-3.9.*.jar"
	log "unpacked libzookeeper-java $cand into ${ZK39_DIR#"$ROOT"/}"
fi

# --- classpaths ---------------------------------------------------------------

deps_cp=
for d in "${DEPS[@]}"; do deps_cp+=":$JAVA_DIR/$d.jar"; done

z39=$(zk39_jar)
j39=${z39/zookeeper-/zookeeper-jute-}
[ -f "$j39" ] || die "missing $j39"

# Each version's own jute jar comes first: the 3.9 jar's manifest also names
# the system (3.8) zookeeper-jute.jar, which must never shadow it.
ZK38_CLASSPATH="$JAVA_DIR/zookeeper-jute.jar:$JAVA_DIR/zookeeper.jar$deps_cp"
ZK39_CLASSPATH="$j39:$z39$deps_cp"

mkdir -p "$ZKDIR"
cat >"$ZKDIR/env.new" <<EOF
# Written by scripts/install-zookeeper.sh; read by internal/testing/zktest.
ZK38_CLASSPATH=$ZK38_CLASSPATH
ZK39_CLASSPATH=$ZK39_CLASSPATH
EOF
mv "$ZKDIR/env.new" "$ZKDIR/env"

# --- smoke check --------------------------------------------------------------

# Starts a standalone server on a free port and asks it `srvr` until it
# answers; prints the version it reports.
smoke() {
	local cp=$1 dir port pid out="" i
	dir=$(mktemp -d)
	for _ in 1 2 3; do
		# Below the kernel's ephemeral range, so outgoing connections do not
		# take it meanwhile; a refused connect means nobody listens there.
		port=$((20000 + RANDOM % 10000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
	done
	mkdir -p "$dir/data"
	cat >"$dir/zoo.cfg" <<EOF
tickTime=200
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=srvr
EOF
	java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData \
		-cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" \
		>"$dir/log" 2>&1 &
	pid=$!
	for i in $(seq 1 300); do
		kill -0 "$pid" 2>/dev/null || break
		# Bounded: a connection accepted while the server starts can stay
		# unanswered, and an unbounded read would hang the whole run.
		out=$(timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf srvr >&3 && cat <&3' _ "$port" 2>/dev/null || true)
		case $out in *"Zookeeper version:"*) break ;; esac
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	case $out in
	*"Zookeeper version:"*)
		echo "$out" | sed -n 's/^Zookeeper version: \([^-,]*\).*/\1/p'
		rm -rf "$dir"
		;;
	*)
		log "server did not answer srvr on 127.0.0.1:$port; last log lines:"
		tail -n 20 "$dir/log" >&2
		rm -rf "$dir"
		return 1
		;;
	esac
}

if [ $check = 1 ]; then
	command -v java >/dev/null || die "java not found on PATH"
	for v in 38:$ZK38_WANT 39:$ZK39_WANT; do
		var=ZK${v%%:*}_CLASSPATH
		got=$(smoke "${!var}") || die "ZooKeeper ${v#*:} does not start"
		[ "$got" = "${v#*:}" ] || die "$var runs ZooKeeper '$got', expected ${v#*:}"
		log "ZooKeeper $got starts and serves"
	done
fi

log "wrote ${ZKDIR#"$ROOT"/}/env"
echo "ZK38_CLASSPATH=$ZK38_CLASSPATH"
echo "ZK39_CLASSPATH=$ZK39_CLASSPATH"
