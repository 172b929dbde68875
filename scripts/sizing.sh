#!/usr/bin/env bash
# make sizing: measures every driver on this machine in one run and prints
# the markdown table of docs/sizing.md (internal/testing/sizing). The go
# test output goes to $COSID_SIZING_LOG (default a temporary file), printed
# whole if a measurement fails. COSID_SIZING_DRIVERS limits the rows
# (memory,sqlite,postgres,zookeeper,mysql,etcd); COSID_SIZING_TIME and
# COSID_SIZING_FLEET set each throughput's duration and the fleet's size.
set -euo pipefail
cd "$(dirname "$0")/.."
log=${COSID_SIZING_LOG:-$(mktemp)}
bench=(-run '^$' -bench '^BenchmarkSizing$' -benchtime 1x -timeout 40m)
status=0
go test "${bench[@]}" ./internal/testing/sizing/bench/ >"$log" 2>&1 || status=$?
if [ "$status" -eq 0 ]; then
	(cd drivers/etcd && go test "${bench[@]}" .) >>"$log" 2>&1 || status=$?
fi
if [ "$status" -ne 0 ]; then
	cat "$log"
	echo "make sizing: a measurement failed (log above, also in $log)" >&2
	exit "$status"
fi
sed -n 's/^SIZING: //p' "$log"
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg). Command: make sizing"
