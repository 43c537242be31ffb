#!/bin/bash
# scripts/load.sh — starts a throw-away riftd (loopback, a free port, temp
# dir) sized for the load and runs bench/load against it: N connections x
# M subscription streams held open, R rounds of one message per stream,
# every delivery checked. Exits with load's status (0: every message
# delivered in order, no error) or 1 when riftd misbehaved.
#
#   scripts/load.sh [--connections N] [--streams M] [--publishers P]
#                   [--rounds R] [--size BYTES] [--timeout SECONDS] ...
#
# Every option is passed to bench/load (its defaults: 1,024 x 128, 4
# publishers, 10 rounds, 64 B). riftd gets max_connections = N + P + 1
# (the publishers' connections and one spare for a control client),
# max_streams_per_connection = M and max_subscriptions = N x M + 16. RIFTD, RIFT and RIFT_LOAD override
# build/release/{riftd,rift,bench/load}. Run it at low priority on a
# shared machine: nice -n 19 scripts/load.sh.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
RIFTD="${RIFTD:-$root/build/release/riftd}"
RIFT="${RIFT:-$root/build/release/rift}"
load_bin="${RIFT_LOAD:-$root/build/release/bench/load}"
# shellcheck source=scripts/riftd-tmp.sh
. "$root/scripts/riftd-tmp.sh"

conns=1024
streams=128
pubs=4
args=("$@")
while [ $# -gt 0 ]; do
    case "$1" in
    --connections) conns="${2:?}"; shift ;;
    --streams) streams="${2:?}"; shift ;;
    --publishers) pubs="${2:?}"; shift ;;
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    esac
    shift
done
for f in "$RIFTD" "$RIFT" "$load_bin"; do
    [ -x "$f" ] || { echo "load.sh: $f missing (scripts/build.sh release)" >&2; exit 2; }
done

trap riftd_tmp_cleanup EXIT
# riftd keeps one descriptor per connection at most (one UDP socket for
# all): the default limit is enough; the client raises its own.
# The broker-wide subscription limit (default 65,536, one slot of it the
# control bridge's) is below 1,024 x 128: room for every subscription too.
# The run is one principal ("load") holding nearly everything, so its
# per-identity share (default: half of each capacity) is raised to the
# capacity less the control reserve.
riftd_tmp_start "    max_connections = $((conns + pubs + 1)),
    max_streams_per_connection = $streams,
    max_subscriptions = $((conns * streams + 16))," \
    "  limits = { per_identity = { connections = $((conns + pubs + 1)),
    subscriptions = $((conns * streams + 16)) },
    control_reserve = { connections = 0, subscriptions = 0 } },"
echo "load.sh: riftd pid $riftd_pid on $riftd_addr"
rc=0
"$load_bin" --server "$riftd_addr" --ca "$riftd_ca" \
    --token-env RIFT_LOAD_TOKEN --server-pid "$riftd_pid" "${args[@]}" || rc=$?
src=0
riftd_tmp_stop || src=$?
if [ "$src" -ne 0 ]; then
    echo "load.sh: riftd exited with $src:" >&2
    tail -20 "$riftd_dir/riftd.log" >&2
    [ "$rc" -ne 0 ] || rc=1
fi
warns=$(grep -c -E ' (warn|error) ' "$riftd_dir/riftd.log" || true)
echo "load.sh: riftd logged $warns warn/error lines"
grep -E ' (warn|error) ' "$riftd_dir/riftd.log" | head -5 || true
exit "$rc"
