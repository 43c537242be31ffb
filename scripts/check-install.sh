#!/bin/sh
# scripts/check-install.sh BUILD_DIR — install librift from BUILD_DIR into a
# temporary prefix and build an example against it through pkg-config, both
# shared and static, then run it: proves `cmake --install` and rift.pc work.
set -eu
cd "$(dirname "$0")/.."
build="${1:-build/release}"
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(find "$prefix" -name rift.pc -printf '%h\n' | head -1)
export PKG_CONFIG_PATH="$libdir"
cc -std=c17 -Wall -Werror -o "$prefix/hello-shared" examples/broker_hello.c \
    $(pkg-config --cflags --libs rift)
LD_LIBRARY_PATH="$prefix/lib:$libdir/.." "$prefix/hello-shared" >/dev/null
# Static librift against the shared system libraries it depends on (the
# dependencies' own static archives are not installed on Debian).
cc -std=c17 -Wall -Werror -o "$prefix/hello-static" examples/broker_hello.c \
    $(pkg-config --cflags rift) "$libdir/../librift.a" \
    $(pkg-config --libs libngtcp2_crypto_gnutls libngtcp2 gnutls) -lpthread -lm
"$prefix/hello-static" >/dev/null
echo "install check: headers, librift.a, librift.so and rift.pc work"
