#!/bin/sh
# scripts/check-format.sh — fail when a C file differs from .clang-format.
# With --fix, reformat them in place instead.
set -eu
cd "$(dirname "$0")/.."
files=$(git ls-files '*.c' '*.h' 2>/dev/null || true)
[ -n "$files" ] || exit 0
if [ "${1:-}" = "--fix" ]; then
    # shellcheck disable=SC2086
    clang-format -i $files
    exit 0
fi
# shellcheck disable=SC2086
clang-format --dry-run --Werror $files
