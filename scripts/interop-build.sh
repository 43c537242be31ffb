#!/bin/sh
# scripts/interop-build.sh — build the independent Quinn + rustls peer used
# by the interop tests, offline, from Debian's Rust crates. A no-op until
# tests/quinn-peer exists.
set -eu
cd "$(dirname "$0")/.."
[ -f tests/quinn-peer/Cargo.toml ] || exit 0
cd tests/quinn-peer
cargo build --offline --quiet --release
