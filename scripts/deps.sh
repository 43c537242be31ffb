#!/bin/sh
# scripts/deps.sh — install what rift needs to build and test, and nothing
# else. Idempotent: when everything is present it changes nothing.
#
#   scripts/deps.sh            build + run dependencies
#   scripts/deps.sh --test     also the test-only tools (clang fuzzer runtime,
#                              the Quinn interop peer's Rust crates)
#
# ngtcp2 1.x comes from bookworm-backports on Debian 12 (Debian 12's own
# ngtcp2 0.12 has a different API and is unsupported upstream). The
# backports source is derived from the machine's existing Debian source, so
# no mirror host is named here. On Debian 13 the native package is 1.x.
set -eu

want_test=0
for a in "$@"; do
    case "$a" in
    --test) want_test=1 ;;
    *) echo "deps.sh: unknown option $a" >&2; exit 2 ;;
    esac
done

SUDO=""
if [ "$(id -u)" != 0 ]; then
    SUDO="sudo"
fi

pkgs="build-essential cmake ninja-build pkg-config git
      libgnutls28-dev gnutls-bin liblua5.4-dev lua5.4 libjansson-dev libmicrohttpd-dev
      libngtcp2-dev libngtcp2-crypto-gnutls-dev"
test_pkgs="clang libclang-rt-14-dev clang-format man-db
      librust-quinn-dev librust-rustls-pemfile-dev librust-tokio-dev
      librust-anyhow-dev
      libnats-dev"

. /etc/os-release
codename="${VERSION_CODENAME:-}"

# Is the installed (or candidate) ngtcp2 a 1.x? Returns 0 when it is.
ngtcp2_is_1x() {
    v=$(dpkg-query -W -f='${Version}' libngtcp2-dev 2>/dev/null || true)
    case "$v" in
    1.*) return 0 ;;
    esac
    return 1
}

missing=""
for p in $pkgs; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
        grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ "$want_test" = 1 ]; then
    for p in $test_pkgs; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
            grep -q "install ok installed"; then
            missing="$missing $p"
        fi
    done
    if ! command -v cargo >/dev/null 2>&1; then
        missing="$missing cargo rustc"
    fi
fi
need_bpo=0
if [ "$codename" = bookworm ] && ! ngtcp2_is_1x; then
    need_bpo=1
fi

if [ -z "$missing" ] && [ "$need_bpo" = 0 ]; then
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive

if [ "$need_bpo" = 1 ]; then
    bpo=/etc/apt/sources.list.d/rift-bookworm-backports.sources
    if [ ! -f "$bpo" ] &&
        ! grep -rqs "bookworm-backports" /etc/apt/sources.list \
            /etc/apt/sources.list.d/; then
        # Take the URI of the main Debian archive already configured here.
        uri=""
        for f in /etc/apt/sources.list.d/*.sources; do
            [ -f "$f" ] || continue
            uri=$(awk '/^URIs:/ {u=$2} /^Suites:/ && / bookworm( |$)/ {
                    if (u != "") { print u; exit } }' "$f")
            [ -n "$uri" ] && break
        done
        if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
            uri=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' \
                /etc/apt/sources.list)
        fi
        if [ -z "$uri" ]; then
            echo "deps.sh: no Debian bookworm apt source found to derive" \
                "bookworm-backports from" >&2
            exit 1
        fi
        printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
            "$uri" | $SUDO tee "$bpo" >/dev/null
    fi
fi

# Installs take minutes on a fresh machine: say what is happening.
echo "deps.sh: updating the package lists" >&2
$SUDO apt-get update -qq
if [ "$need_bpo" = 1 ]; then
    echo "deps.sh: installing ngtcp2 1.x from bookworm-backports" >&2
    $SUDO apt-get install -y -qq -t bookworm-backports \
        libngtcp2-dev libngtcp2-crypto-gnutls-dev >/dev/null
fi
if [ -n "$missing" ]; then
    # shellcheck disable=SC2086
    echo "deps.sh: installing" $missing >&2
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
if ! ngtcp2_is_1x; then
    echo "deps.sh: ngtcp2 1.x is required but not installed" >&2
    exit 1
fi
