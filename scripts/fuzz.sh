#!/bin/sh
# scripts/fuzz.sh — builds the fuzz preset (clang, libFuzzer, ASan+UBSan)
# and runs every fuzz target for a fixed time, starting from its checked-in
# corpus. Prints execs and crashes per target; exits 1 if any target
# crashed (or failed to run), 0 otherwise.
#
#   scripts/fuzz.sh [-t SECONDS] [-j PARALLEL] [-s] [-n] [TARGET...]
#
#   -t SECONDS  time per target (default 600)
#   -j N        targets run at once (default 1; the machine may be shared)
#   -s          save new units into fuzz/corpus/<target>/ (default: new
#               units go to a scratch directory that is removed)
#   -n          no build (use build/fuzz as it is; by default the fuzz
#               preset is configured if needed and the targets built)
#   TARGET...   a subset (default: every fuzz/<target>.c but replay.c)
#
# Crash inputs are kept in build/fuzz/fuzz-out/<target>/ (crash-*, leak-*,
# timeout-*, oom-*); the full libFuzzer log of a run is
# build/fuzz/fuzz-out/<target>.log. Run it at low priority on a shared
# machine: nice -n 19 scripts/fuzz.sh.
set -eu
cd "$(dirname "$0")/.."
secs=600
par=1
save=0
build=1
while getopts t:j:sn opt; do
    case "$opt" in
    t) secs="$OPTARG" ;;
    j) par="$OPTARG" ;;
    s) save=1 ;;
    n) build=0 ;;
    *)
        sed -n '2,/^set -eu/p' "$0" | sed '$d' >&2
        exit 2
        ;;
    esac
done
shift $((OPTIND - 1))

if [ "$#" -eq 0 ]; then
    for f in fuzz/*.c; do
        t=$(basename "$f" .c)
        [ "$t" = replay ] || set -- "$@" "$t"
    done
fi
if [ "$build" -eq 1 ]; then
    # The fuzz preset as scripts/build.sh makes it, but only the targets
    # asked for (not the whole test suite).
    [ -f build/fuzz/CMakeCache.txt ] || cmake --preset fuzz >/dev/null
    targets=""
    for t in "$@"; do
        targets="$targets fuzz_$t"
    done
    # shellcheck disable=SC2086 # one word per target
    cmake --build build/fuzz -j "${RIFT_BUILD_JOBS:-$(nproc)}" \
        --target $targets
fi
out=build/fuzz/fuzz-out
mkdir -p "$out"

# Runs one target; its summary line goes to $out/<target>.summary.
run_one() {
    t="$1"
    bin="build/fuzz/fuzz/fuzz_$t"
    [ -x "$bin" ] || bin="build/fuzz/fuzz_$t"
    log="$out/$t.log"
    art="$out/$t"
    mkdir -p "$art"
    if [ ! -x "$bin" ]; then
        echo "$t: no binary fuzz_$t in build/fuzz" >"$out/$t.summary"
        return
    fi
    if [ "$save" -eq 1 ]; then
        work="fuzz/corpus/$t"
        mkdir -p "$work"
        dirs="$work"
    else
        # New units land in the scratch dir; the checked-in corpus is
        # only read.
        work=$(mktemp -d "$out/$t.corpus.XXXXXX")
        dirs="$work"
        [ ! -d "fuzz/corpus/$t" ] || dirs="$work fuzz/corpus/$t"
    fi
    # -fork=1 keeps going after a crash, so a run always lasts its time
    # and the crash count is real; every crash input lands in $art.
    set +e
    # shellcheck disable=SC2086 # $dirs is two words by design
    "$bin" -max_total_time="$secs" -fork=1 -ignore_crashes=1 \
        -ignore_timeouts=1 -ignore_ooms=1 -timeout=30 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$art/" $dirs >"$log" 2>&1
    rc=$?
    set -e
    [ "$save" -eq 1 ] || rm -rf "$work"
    crashes=$(find "$art" -type f \( -name 'crash-*' -o -name 'leak-*' \
        -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
    # The fork driver prints "#N ... exec/s: ... crashes: C ..." lines; the
    # last one has the totals. Fall back to the per-process final stats.
    execs=$(grep -o '^#[0-9]*' "$log" | tail -n 1 | tr -d '#')
    [ -n "$execs" ] || execs=$(sed -n 's/^stat::number_of_executed_units: *//p' \
        "$log" | awk '{s += $1} END {print s + 0}')
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | sed 's/cov: //')
    echo "$t: ${secs}s execs=${execs:-0} cov=${cov:-?} crashes=$crashes rc=$rc" \
        >"$out/$t.summary"
}

# Runs the targets, $par at a time.
n=0
for t in "$@"; do
    rm -f "$out/$t.summary"
    run_one "$t" &
    n=$((n + 1))
    if [ "$n" -ge "$par" ]; then
        wait
        n=0
    fi
done
wait

fail=0
for t in "$@"; do
    line=$(cat "$out/$t.summary" 2>/dev/null || echo "$t: no result")
    echo "$line"
    case "$line" in
    *" crashes=0 rc=0") ;;
    *) fail=1 ;;
    esac
done
if [ "$fail" -ne 0 ]; then
    echo "fuzz: FAILED (inputs in $out/<target>/, logs in $out/<target>.log)"
    exit 1
fi
echo "fuzz: all targets ran ${secs}s with 0 crashes"
