#!/bin/bash
# scripts/soak.sh — starts a throw-away riftd (loopback, a free port, temp
# dir, two file streams) and runs bench/soak against it: a steady mix of
# pub/sub, request/reply, stream publish (fsync and no fsync), fetch+ack
# and connection churn for --duration seconds (default 600), with riftd's
# RSS sampled every 10 s. Exits 0 when every message was delivered,
# nothing failed, riftd stopped cleanly and its RSS after the warm-up grew
# at most 5 % (bench/soak.c says how it is judged).
#
#   scripts/soak.sh [--duration SECONDS] [--smoke] [bench/soak options]
#
#   --smoke   a short check that the tool works (the ctest soak.smoke):
#             20 s, samples every 2 s, the RSS series is printed but not
#             judged (a 20 s run on a shared machine says nothing about
#             growth); deliveries and errors are still checked.
#
# RIFTD, RIFT and RIFT_SOAK override build/release/{riftd,rift,bench/soak}.
# On a shared machine: nice -n 19 scripts/soak.sh.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
RIFTD="${RIFTD:-$root/build/release/riftd}"
RIFT="${RIFT:-$root/build/release/rift}"
soak_bin="${RIFT_SOAK:-$root/build/release/bench/soak}"
# shellcheck source=scripts/riftd-tmp.sh
. "$root/scripts/riftd-tmp.sh"

args=()
while [ $# -gt 0 ]; do
    case "$1" in
    --smoke) args+=(--duration 20 --interval 2 --no-rss-judge) ;;
    -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1") ;;
    esac
    shift
done
for f in "$RIFTD" "$RIFT" "$soak_bin"; do
    [ -x "$f" ] || { echo "soak.sh: $f missing (scripts/build.sh release)" >&2; exit 2; }
done

trap riftd_tmp_cleanup EXIT
# Retention small enough to be reached early in the warm-up (sync: 2,000
# records at 50/s, nosync: 20,000 at 500/s), so the measured part is a
# steady state: the journals roll and compact instead of growing.
riftd_tmp_start "    streams = {
      soak_sync = { subjects = { \"soak.sync.>\" }, sync_on_write = true,
        storage_path = \"streams/soak_sync\", max_messages = 2000 },
      soak_nosync = { subjects = { \"soak.nosync.>\" }, sync_on_write = false,
        storage_path = \"streams/soak_nosync\", max_messages = 20000 },
    },"
echo "soak.sh: riftd pid $riftd_pid on $riftd_addr"
rc=0
"$soak_bin" --server "$riftd_addr" --ca "$riftd_ca" \
    --token-env RIFT_LOAD_TOKEN --server-pid "$riftd_pid" "${args[@]}" || rc=$?
src=0
riftd_tmp_stop || src=$?
if [ "$src" -ne 0 ]; then
    echo "soak.sh: riftd exited with $src:" >&2
    tail -20 "$riftd_dir/riftd.log" >&2
    [ "$rc" -ne 0 ] || rc=1
fi
warns=$(grep -c -E ' (warn|error) ' "$riftd_dir/riftd.log" || true)
echo "soak.sh: riftd logged $warns warn/error lines"
grep -E ' (warn|error) ' "$riftd_dir/riftd.log" | head -5 || true
exit "$rc"
