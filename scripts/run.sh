#!/bin/sh
# scripts/run.sh — the README's run command: installs what is missing,
# builds, and starts riftd. With no -c and no ./rift.lua riftd runs its
# embedded development configuration (data in ./rift-data).
set -eu
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/deps.sh"
"$root/scripts/build.sh" release >/dev/null
exec "$root/build/release/riftd" "$@"
