#!/bin/sh
# scripts/build.sh PRESET — configure (once) and build one CMake preset
# into build/PRESET. Presets: release, dev (ASan+UBSan), tsan, fuzz (clang).
set -eu
cd "$(dirname "$0")/.."
preset="${1:-release}"
if [ ! -f "build/$preset/CMakeCache.txt" ]; then
    cmake --preset "$preset" >/dev/null
fi
cmake --build "build/$preset" -j "${RIFT_BUILD_JOBS:-$(nproc)}"
