#!/usr/bin/env bash
# bench/cluster_compare.sh — cross-node 1→1 throughput through three riftd
# bridged to a three-node nats-server cluster (docs/cluster.md), against the
# same nats-server cluster driven directly, both with bench/nats-load:
# a subscriber on node 3, a publisher on node 1. Prints both rows, the
# ratio of the rates and each side's CPU seconds per message (riftd and
# nats-server processes summed). Not yet a compare.sh row.
#
# usage: bench/cluster_compare.sh [MSGS] [SIZE]
#   RIFTD (default build/release/riftd), NATS_LOAD (build/go/nats-load),
#   NATS_SERVER (nats-server on PATH).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
msgs="${1:-200000}"
size="${2:-64}"
riftd="${RIFTD:-$root/build/release/riftd}"
load="${NATS_LOAD:-$root/build/go/nats-load}"
nserver="${NATS_SERVER:-$(command -v nats-server)}"
tmp="$(mktemp -d)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_log() { # wait_log FILE REGEX
    for _ in $(seq 1 300); do
        if grep -Eo "$2" "$1" 2>/dev/null | head -1; then return 0; fi
        sleep 0.1
    done
    return 1
}
cpu_ticks() { # cpu_ticks PID... -> utime+stime in clock ticks
    local t=0
    for p in "$@"; do
        t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
    done
    echo "$t"
}

declare -a cport rport npid rpid rurl
for i in 0 1 2; do cport[$i]=$(free_port); rport[$i]=$(free_port); done
for i in 0 1 2; do
    d="$tmp/n$i"; mkdir -p "$d"
    routes=""
    for j in 0 1 2; do
        [ "$j" = "$i" ] && continue
        routes="$routes${routes:+, }nats-route://127.0.0.1:${rport[$j]}"
    done
    cat >"$d/nats.conf" <<EOC
server_name: n$i
host: 127.0.0.1
port: ${cport[$i]}
cluster { name: rift, host: 127.0.0.1, port: ${rport[$i]}, routes: [$routes] }
EOC
    (cd "$d" && exec "$nserver" -c nats.conf >"$d/log" 2>&1) &
    npid[$i]=$!; pids+=("${npid[$i]}")
done
for i in 0 1 2; do wait_log "$tmp/n$i/log" "Server is ready" >/dev/null; done
printf 'cn = "localhost"\nexpiration_days = 2\ntls_www_server\nsigning_key\n' \
    >"$tmp/cert.tmpl"
certtool --generate-privkey --key-type=ecdsa --curve=secp256r1 \
    --outfile "$tmp/key.pem" >/dev/null 2>&1
certtool --generate-self-signed --load-privkey "$tmp/key.pem" \
    --template "$tmp/cert.tmpl" --outfile "$tmp/cert.pem" >/dev/null 2>&1
for i in 0 1 2; do
    d="$tmp/r$i"; mkdir -p "$d"
    cat >"$d/rift.lua" <<EOC
return {
  log = "info",
  messaging = {
    listen = "127.0.0.1:0",
    certificate = "$tmp/cert.pem", private_key = "$tmp/key.pem",
    subscription_capacity = 1000000,
    principals = { { name = "bench", token_env = "RIFT_BENCH_TOKEN",
      publish = { "bench.>", "_INBOX.>" }, subscribe = { "bench.>" } } },
  },
  nats = { listen = "127.0.0.1:0", allow_plaintext = true,
           anonymous = "bench", write_deadline = 10 },
  cluster = { node = "r$i", nats = { servers = { "nats://127.0.0.1:${cport[$i]}" } } },
}
EOC
    (cd "$d" && RIFT_BENCH_TOKEN=bench-token-0123456789abcdef0123456789ab \
        exec "$riftd" -c rift.lua >"$d/log" 2>&1) &
    rpid[$i]=$!; pids+=("${rpid[$i]}")
done
for i in 0 1 2; do
    addr=$(wait_log "$tmp/r$i/log" 'rift: NATS on [0-9.]+:[0-9]+' | sed 's/.* on //') || {
        echo "riftd r$i did not start: $(tail -3 "$tmp/r$i/log")" >&2; exit 1; }
    rurl[$i]="nats://$addr"
done

# run LABEL PUB_URL SUB_URL PIDS...: subscriber first, publisher once the
# subscription has crossed the routes (the publisher retries nothing, so
# a short settle; this is a benchmark, not a test).
run() {
    local label="$1" pu="$2" su="$3"; shift 3
    "$load" sub --url "$su" --msgs "$msgs" --size "$size" --subject bench.x \
        --csv "$tmp/rows.csv" --label "$label" --progress off \
        >"$tmp/$label.sub" 2>&1 &
    local sp=$!
    sleep 2
    local c0; c0=$(cpu_ticks "$@")
    "$load" pub --url "$pu" --msgs "$msgs" --size "$size" --subject bench.x \
        --progress off >"$tmp/$label.pub" 2>&1
    wait "$sp" || true
    local c1; c1=$(cpu_ticks "$@")
    local hz; hz=$(getconf CLK_TCK)
    echo "$label: $(grep -Eo '[0-9.]+k? msg/s' "$tmp/$label.sub" | head -1)" \
        "server CPU $(awk -v t=$((c1 - c0)) -v h="$hz" -v n="$msgs" \
        'BEGIN{printf "%.2f us/msg", t / h / n * 1e6}')"
    tail -2 "$tmp/$label.sub" | sed 's/^/  /'
}
run direct "nats://127.0.0.1:${cport[0]}" "nats://127.0.0.1:${cport[2]}" \
    "${npid[@]}"
run riftd "${rurl[0]}" "${rurl[2]}" "${npid[@]}" "${rpid[@]}"
cat "$tmp/rows.csv"
