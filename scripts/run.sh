#!/bin/sh
# scripts/run.sh — the README's run command: installs what is missing,
# builds riftd and rift (nothing else: no tests, no benchmarks), and execs
# riftd in the foreground, in the directory run.sh was started from, with
# the arguments given. With no -c and no ./rift.lua riftd runs its
# embedded development configuration (data in ./rift-data) and prints the
# commands to try, with the path of the rift it was built with.
#
# Progress goes to stderr: what deps.sh installs, and the build's own
# progress lines. RIFT_BUILD_JOBS sets the build's parallelism.
set -eu
root="$(cd "$(dirname "$0")/.." && pwd)"
# RIFT_BUILD_DIR: an already configured build tree to use instead (the
# tests run run.sh against the tree they were built in).
build="${RIFT_BUILD_DIR:-$root/build/release}"
say() { printf 'run.sh: %s\n' "$*" >&2; }

say "checking the build dependencies (scripts/deps.sh)"
"$root/scripts/deps.sh"
if [ -z "${RIFT_BUILD_DIR:-}" ] && [ ! -f "$build/CMakeCache.txt" ]; then
    say "configuring $build"
    (cd "$root" && cmake --preset release >/dev/null)
fi
say "building riftd and rift in $build"
cmake --build "$build" --target riftd rift \
    -j "${RIFT_BUILD_JOBS:-$(nproc)}" >&2
say "starting $build/riftd in $(pwd)"
exec "$build/riftd" "$@"
