#!/bin/sh
# scripts/check-install.sh BUILD_DIR — install librift from BUILD_DIR into a
# temporary prefix and build an example against it through pkg-config, both
# shared and static, then run it: proves `cmake --install` and rift.pc work.
# Also checks the programs, the systemd unit and the man pages are installed,
# that the pages render without warnings, and (when systemd-analyze exists)
# that the unit verifies.
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
for f in bin/riftd bin/rift lib/systemd/system/riftd.service \
         share/man/man1/rift.1 share/man/man5/riftd.lua.5 \
         share/man/man8/riftd.8; do
    test -f "$prefix/$f" || { echo "install check: $f not installed" >&2; exit 1; }
done
# The installed programs link librift statically: they must run without
# LD_LIBRARY_PATH.
"$prefix/bin/riftd" --version >/dev/null
"$prefix/bin/rift" version >/dev/null
for page in "$prefix"/share/man/man*/*; do
    warnings=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
    if [ -n "$warnings" ]; then
        echo "install check: $page: $warnings" >&2
        exit 1
    fi
done
unit="$prefix/lib/systemd/system/riftd.service"
grep -q '^ExecReload=/bin/kill -HUP \$MAINPID$' "$unit"
if command -v systemd-analyze >/dev/null 2>&1; then
    # The unit names riftd at the configured prefix; verify a copy that
    # names this installation, with its man pages on MANPATH (Documentation=).
    sed "s|^ExecStart=[^ ]*/riftd |ExecStart=$prefix/bin/riftd |" "$unit" \
        >"$prefix/riftd.service"
    MANPATH="$prefix/share/man" systemd-analyze verify "$prefix/riftd.service"
fi
echo "install check: headers, librift.a, librift.so, rift.pc, riftd, rift, riftd.service and man pages work"
