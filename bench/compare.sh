#!/bin/bash
# bench/compare.sh — rift (QUIC + TLS 1.3) against nats-server (plain TCP,
# and TCP + TLS), and riftd's NATS listener (riftd-nats, TCP + TLS and
# plaintext on loopback) driven by the same nats-load client as
# nats-server, same workloads, one run on one machine, alternating the
# contenders round after round; prints median / min / max per row, the
# ratio rift/NATS and CPU seconds per million messages, plus the loopback
# UDP, fdatasync and thread wake-up ceilings. The stan-* rows put riftd's
# NATS Streaming service (bench/stan-load, nats.c's STAN API; file store,
# sync_on_write) beside JetStream (nats-load, file storage) in the same
# run. The cluster-* rows cross a three-node nats-server cluster, directly
# and through three riftd bridged to it (run_cluster).
# docs/performance.md explains every row.
#
#   bench/compare.sh [--rounds N] [--scale F] [--rows a,b,..] [--report]
#                    [--out DIR] [--from CSV] [--no-install] [--no-rift]
#                    [--no-nats] [--keep] [--contention]
#
#   --rounds N   alternating rounds per row (default 5)
#   --scale F    multiply every row's message count (default 1; 0.2 = quick)
#   --rows LIST  only these row ids (see ROWS below)
#   --report     also rewrite the results section of docs/performance.md and
#                the charts and CSV in docs/perf/ (one command regenerates
#                the report)
#   --from CSV   measure nothing; summarise an earlier results.csv (with its
#                env.txt beside it)
#   --out DIR    results directory (default build/compare/<timestamp>)
#   --no-install do not apt-get missing packages
#   --no-rift, --no-nats   leave one side out (--no-rift also leaves out
#                riftd-nats)
#   --keep       keep the servers' temporary directories
#   --contention one busy-loop process per CPU (normal priority, pinned like
#                the contenders) runs during every measurement, for rift and
#                NATS alike, and is killed when the measurement ends
#
# Environment: RIFT_CLI and RIFTD override build/release/rift and
# build/release/riftd for the rift side.
#
# Installs from Debian packages only (idempotent, like scripts/deps.sh):
# nats-server, golang-go + golang-github-nats-io-go-nats-dev (our own load
# generator bench/nats-load builds offline against them, GOPATH mode),
# gnuplot-nox and gnutls-bin (certtool).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
command_line="bench/compare.sh $*"
rounds=5
scale=1
only_rows=""
report=0
from_csv=""
out=""
install=1
want_rift=1
want_nats=1
keep=0
contention=0

die() {
    echo "compare.sh: $*" >&2
    exit 1
}

while [ $# -gt 0 ]; do
    case "$1" in
    --rounds) rounds="${2:?}"; shift ;;
    --scale) scale="${2:?}"; shift ;;
    --rows) only_rows="${2:?}"; shift ;;
    --report) report=1 ;;
    --from) from_csv="${2:?}"; shift ;;
    --out) out="${2:?}"; shift ;;
    --no-install) install=0 ;;
    --no-rift) want_rift=0 ;;
    --no-nats) want_nats=0 ;;
    --keep) keep=1 ;;
    --contention) contention=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (try --help)" ;;
    esac
    shift
done
case "$rounds" in '' | *[!0-9]* | 0) die "--rounds wants a positive integer" ;; esac
awk -v s="$scale" 'BEGIN { exit !(s > 0) }' || die "--scale wants a positive number"
# The committed report is a quiet-machine run; contention results are
# summarised by hand in their own section of docs/performance.md.
[ "$contention" = 1 ] && [ "$report" = 1 ] &&
    die "--contention and --report do not mix (see docs/performance.md, \"Under CPU contention\")"

# ---- The rows -------------------------------------------------------------
# id | issue item | durability | messages at scale 1 | arguments | title
# Arguments are the same for `rift bench` and nats-load (docs/performance.md,
# "Driving rift bench"); durability picks the stream: sync = fsync before
# the ack (rift sync_on_write = true), nosync = no fsync.
ROWS=(
    "pub16|1|-|5000000|pub --size 16|pub only, 16 B"
    "pub64|1|-|5000000|pub --size 64|pub only, 64 B"
    "pub1024|1|-|1000000|pub --size 1024|pub only, 1,024 B"
    "pubsub|2|-|1000000|pubsub --size 64 --subs 1|1 pub -> 1 sub, 64 B"
    "fanout4|3|-|500000|pubsub --size 64 --subs 4|1 pub -> 4 subs (delivered), 64 B"
    "req|4|-|10000|req --size 64|request/reply, sequential, 64 B"
    "batch256|5|-|1000000|pubsub --size 64 --subs 1 --batch 256|batches of 256 + flush barrier, then receive"
    "js-sync-1|6|sync|2000|stream --size 64 --pubs 1 --batch 1|durable publish, synced, 1 publisher"
    "js-sync-64|6|sync|5000|stream --size 64 --pubs 64 --batch 1|durable publish, synced, 64 publishers"
    "js-nosync-1|6|nosync|20000|stream --size 64 --pubs 1 --batch 1|durable publish, unsynced, 1 publisher"
    "js-async|6|nosync|200000|stream --size 64 --pubs 1 --batch 256|durable publish, unsynced, window of 256"
    "js-fetch|6|nosync|200000|consume --size 64 --batch 256|fetch 256 + ack each (unsynced stream)"
    # Issue 18's consumer extensions: a push consumer (JetStream's push
    # consumer with MaxAckPending on the NATS side), and rift-only rows of
    # the waiting fetch (RIFT_ONLY below): its latency publish -> fetched
    # with 1 and 100 waiting fetchers (the live push latency is printed in
    # runs.log beside it) and the CPU of 1,000 idle ones over 5 s.
    "js-push-1024|18|nosync|200000|push --size 64 --batch 1024|push consumer, max in flight 1,024 + ack each (unsynced stream)"
    "wait-1|18|nosync|2000|wait --size 64 --subs 1|waiting fetch, 1 fetcher: publish -> fetched"
    "wait-100|18|nosync|200|wait --size 64 --subs 100|waiting fetch, 100 fetchers on one consumer: publish -> fetched"
    "idle-1000|18|nosync|100|idle --subs 1000|1,000 idle waiting fetchers for 5 s (CPU only)"
    # NATS Streaming: riftd-stan (stan-load, STAN_ARGS below) against
    # JetStream (nats-load with these arguments) on the synced servers.
    "stan-async|S1|sync|20000|stream --size 64 --pubs 1 --batch 256|STAN publish, synced, window of 256"
    "stan-sync-1|S2|sync|1000|stream --size 64 --pubs 1 --batch 1|STAN publish, synced, 1 publisher"
    "stan-sync-64|S3|sync|5000|stream --size 64 --pubs 64 --batch 1|STAN publish, synced, 64 publishers"
    "stan-sub-1024|S4|sync|50000|push --size 64 --batch 1024|STAN subscribe, maxInFlight 1,024 + manual acks"
    # Issue 19: three riftd bridged to a three-node nats-server cluster
    # (riftd-nats TCP column) against that cluster driven directly (NATS
    # TCP column), node 1 -> node 3; run_cluster.
    "cluster-1to1|19|-|500000|pubsub --size 64 --subs 1|cross-node 1 pub (node 1) -> 1 sub (node 3), 64 B, 3-node cluster"
    "cluster-req|19|-|5000|req --size 64|cross-node request/reply, requester node 1, responder node 3, 64 B"
    # rift: STREAM_PUBLISH to node 1's stream bench_r3 (replicas = 3,
    # stored by JetStream); NATS: JetStream publish to an R3 stream there.
    "cluster-stream|19|-|20000|stream --size 64 --pubs 1 --batch 256|replicated stream (3 replicas) publish on node 1, window of 256, deduplicated (Nats-Msg-Id) on both sides"
)
# stan-load's arguments for the stan-* rows (the JetStream peer takes the
# row's own, which mean the same: --batch is the window or the bound).
declare -A STAN_ARGS=(
    [stan-async]="pub --size 64 --pubs 1 --window 256"
    [stan-sync-1]="pub --size 64 --pubs 1 --window 1"
    [stan-sync-64]="pub --size 64 --pubs 64 --window 1"
    [stan-sub-1024]="sub --size 64 --max-inflight 1024"
)
# Rows whose latency percentiles get their own lines in the table.
LAT_ROWS="req js-sync-1 js-nosync-1 stan-sync-1 wait-1 wait-100 cluster-req"
# Rows nats-load has no scenario for: rift alone.
RIFT_ONLY=" wait-1 wait-100 idle-1000 "

row_field() { # row_field ROWSPEC N
    echo "$1" | cut -d'|' -f"$2"
}

selected_rows() {
    local r id
    for r in "${ROWS[@]}"; do
        id=$(row_field "$r" 1)
        if [ -z "$only_rows" ] || [[ ",$only_rows," == *",$id,"* ]]; then
            echo "$r"
        fi
    done
}

# ---- Setup ------------------------------------------------------------------
stamp=$(date -u +%Y%m%d-%H%M%S)
if [ -n "$from_csv" ]; then
    [ -f "$from_csv" ] || die "$from_csv: no such file"
    out="${out:-$(dirname "$from_csv")}"
else
    suffix=""
    [ "$contention" = 1 ] && suffix=-contention
    out="${out:-$root/build/compare/$stamp$suffix}"
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"
gobin="$root/build/go"
results="$out/results.csv"
runlog="$out/runs.log"

install_deps() {
    local p missing=""
    for p in nats-server golang-go golang-github-nats-io-go-nats-dev \
        gnuplot-nox gnutls-bin; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
            grep -q "install ok installed"; then
            missing="$missing $p"
        fi
    done
    if [ -n "$missing" ]; then
        [ "$install" = 1 ] || die "missing packages:$missing (drop --no-install)"
        local sudo=""
        [ "$(id -u)" = 0 ] || sudo=sudo
        echo "compare.sh: installing$missing" >&2
        $sudo apt-get update -qq
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
            --no-install-recommends $missing >/dev/null
    fi
}

# Offline GOPATH-mode build against Debian's Go sources; never a download.
go_build() { # go_build DIR
    mkdir -p "$gobin"
    (cd "$root/bench/$1" &&
        GO111MODULE=off GOPATH=/usr/share/gocode GOPROXY=off GOFLAGS='' \
            GOCACHE="$gobin/cache" go build -o "$gobin/$1" .)
}

build_all() {
    go_build nats-load
    go_build perf-report
    local b="$root/build/release"
    if [ ! -f "$b/CMakeCache.txt" ]; then
        (cd "$root" && cmake --preset release >/dev/null)
    fi
    cmake --build "$b" --target bench_udp_ceiling bench_fsync_ceiling \
        bench_wake_ceiling >/dev/null
    # Only when CMake found libnats (it builds stan-load then).
    cmake --build "$b" --target bench_stan_load >/dev/null 2>&1 || true
    if [ "$want_rift" = 1 ]; then
        # riftd and rift may not exist yet; rift_check says so later.
        cmake --build "$b" --target riftd rift >/dev/null 2>&1 || true
    fi
}

if [ "$want_nats" = 1 ] || [ "$want_rift" = 1 ] || [ "$report" = 1 ]; then
    if [ "$install" = 1 ] && [ -z "$from_csv" ]; then
        "$root/scripts/deps.sh"
    fi
    install_deps
fi
if [ -z "$from_csv" ]; then
    build_all
else
    go_build perf-report
fi

# Server on CPU 0, clients on CPU 1 when there are 2 CPUs.
ncpu=$(nproc)
if [ "$ncpu" -ge 2 ]; then
    server_pin=(taskset -c 0)
    client_pin=(taskset -c 1)
    pinning="server CPU 0, clients CPU 1"
else
    server_pin=()
    client_pin=()
    pinning="none (1 CPU)"
fi

tmp=""
pids=()
hog_pids=()

# ---- CPU contention (--contention) ------------------------------------------
# One shell busy loop per CPU, pinned to it, at normal priority: the
# contenders share every core with a task that never sleeps, as on a
# machine running other work. Each hog lives for one measurement (the
# run's own 600 s timeout bounds it too) and is killed when it ends.
HOG_SECONDS=610
hog_start() {
    [ "$contention" = 1 ] || return 0
    local cpu pin=()
    for cpu in $(seq 0 $((ncpu - 1))); do
        [ "$ncpu" -ge 2 ] && pin=(taskset -c "$cpu")
        timeout "$HOG_SECONDS" "${pin[@]}" sh -c 'while :; do :; done' &
        hog_pids+=("$!")
    done
}
hog_stop() {
    local p
    for p in "${hog_pids[@]}"; do
        kill "$p" 2>/dev/null || true
    done
    for p in "${hog_pids[@]}"; do
        wait "$p" 2>/dev/null || true
    done
    hog_pids=()
}

cleanup() {
    local p
    hog_stop
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null || true
    done
    for p in "${pids[@]}"; do
        wait "$p" 2>/dev/null || true
    done
    if [ -n "$tmp" ] && [ "$keep" = 0 ]; then
        rm -rf "$tmp"
    elif [ -n "$tmp" ]; then
        echo "compare.sh: kept $tmp" >&2
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_log FILE REGEX — wait up to 15 s for a line, print the first match.
wait_log() {
    local i
    for i in $(seq 1 150); do
        if grep -Eo "$2" "$1" 2>/dev/null | head -1 | grep .; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

# Self-signed CA and a server certificate for localhost / 127.0.0.1,
# ECDSA P-256, shared by nats-server and riftd.
make_certs() {
    local d="$tmp/tls"
    mkdir -p "$d"
    cat >"$d/ca.tmpl" <<EOF
cn = "rift bench CA"
ca
cert_signing_key
expiration_days = 7
EOF
    cat >"$d/server.tmpl" <<EOF
cn = "localhost"
dns_name = "localhost"
ip_address = "127.0.0.1"
tls_www_server
signing_key
expiration_days = 7
EOF
    certtool --generate-privkey --key-type=ecdsa --curve=secp256r1 \
        --outfile "$d/ca-key.pem" >/dev/null 2>&1
    certtool --generate-self-signed --load-privkey "$d/ca-key.pem" \
        --template "$d/ca.tmpl" --outfile "$d/ca.pem" >/dev/null 2>&1
    certtool --generate-privkey --key-type=ecdsa --curve=secp256r1 \
        --outfile "$d/server-key.pem" >/dev/null 2>&1
    certtool --generate-certificate --load-privkey "$d/server-key.pem" \
        --load-ca-certificate "$d/ca.pem" --load-ca-privkey "$d/ca-key.pem" \
        --template "$d/server.tmpl" --outfile "$d/server-cert.pem" >/dev/null 2>&1
    [ -s "$d/server-cert.pem" ] || die "certtool failed to make certificates"
}

# ---- NATS side ----------------------------------------------------------------
declare -A nats_url nats_pid
nats_version=""

nats_sync="n/a"

# start_nats NAME tls(0|1) jetstream(0|1|sync)
start_nats() {
    local name="$1" tls="$2" js="$3" d="$tmp/nats-$1"
    mkdir -p "$d"
    {
        echo 'listen: "127.0.0.1:-1"'
        echo 'write_deadline: "10s"'
        if [ "$tls" = 1 ]; then
            echo "tls { cert_file: \"$tmp/tls/server-cert.pem\", key_file: \"$tmp/tls/server-key.pem\", timeout: 5 }"
        fi
        if [ "$js" != 0 ]; then
            echo "jetstream {"
            echo "  store_dir: \"$d/store\""
            echo "  max_memory_store: 256MB"
            echo "  max_file_store: 8GB"
            # fsync before every ack; only nats-server >= 2.10 knows it.
            [ "$js" = sync ] && echo "  sync_interval: always"
            echo "}"
        fi
    } >"$d/nats.conf"
    "${server_pin[@]}" nats-server -c "$d/nats.conf" -l "$d/nats.log" &
    local pid=$!
    pids+=("$pid")
    local addr
    addr=$(wait_log "$d/nats.log" 'client connections on [0-9.]+:[0-9]+' |
        sed 's/.* on //') || die "nats-server $name did not start: $(tail -3 "$d/nats.log")"
    if [ "$tls" = 1 ]; then
        nats_url[$name]="tls://$addr"
    else
        nats_url[$name]="nats://$addr"
    fi
    nats_pid[$name]=$pid
}

start_nats_all() {
    nats_version=$(nats-server --version 2>/dev/null | sed 's/.*v//')
    start_nats tcp 0 0
    start_nats tls 1 0
    start_nats js-tcp 0 1
    start_nats js-tls 1 1
    if dpkg --compare-versions "$nats_version" ge 2.10; then
        start_nats js-sync-tcp 0 sync
        start_nats js-sync-tls 1 sync
        nats_sync="JetStream file storage with sync_interval: always"
    else
        # nats-server 2.9.10 (Debian 12) has no sync_interval (2.10.0 added
        # it): every message is write()n to the page cache before the ack
        # and fsynced every 60 s. The synced rows run on the default
        # JetStream servers; docs/performance.md, "Durable rows".
        nats_sync="not available in nats-server $nats_version (no sync_interval; page cache before the ack, fsync every 60 s); synced rows use the default"
    fi
}

# run_nats TRANSPORT ROWSPEC MSGS — one measurement, one CSV row.
run_nats() {
    local transport="$1" spec="$2" msgs="$3"
    local id dur args server extra=()
    id=$(row_field "$spec" 1)
    dur=$(row_field "$spec" 3)
    args=$(row_field "$spec" 5)
    server="$transport"
    if [ "$dur" != "-" ]; then
        server="js-$transport"
        if [ "$dur" = sync ] && [ -n "${nats_url[js-sync-$transport]:-}" ]; then
            server="js-sync-$transport"
        fi
        extra=(--stream "bench_$dur" --subject "bench.$dur.x")
    fi
    [ "$transport" = tls ] && extra+=(--ca "$tmp/tls/ca.pem")
    # shellcheck disable=SC2086
    timeout 600 "${client_pin[@]}" "$gobin/nats-load" $args --msgs "$msgs" \
        --url "${nats_url[$server]}" --server-pid "${nats_pid[$server]}" \
        --csv "$results" --label "$id" --progress off "${extra[@]}"
}

# ---- rift side ----------------------------------------------------------------
# RIFT_CLI / RIFTD point at other binaries (another build, another server
# speaking the same protocol); by default the release build's.
rift_bin="${RIFT_CLI:-$root/build/release/rift}"
riftd_bin="${RIFTD:-$root/build/release/riftd}"
rift_addr=""
rift_pid=""
rift_status=""

# rift_check — is there a riftd and a `rift bench`? Sets rift_status.
rift_check() {
    local cli="${rift_bin#"$root"/}" daemon="${riftd_bin#"$root"/}"
    if [ ! -x "$riftd_bin" ]; then
        rift_status="skipped: $daemon does not exist yet"
    elif [ ! -x "$rift_bin" ]; then
        rift_status="skipped: $cli does not exist yet"
    elif ! "$rift_bin" bench --help >/dev/null 2>&1; then
        rift_status="skipped: '$cli bench' is not implemented yet (issue 8)"
    else
        rift_status="ok"
        return 0
    fi
    return 1
}

start_rift() {
    local d="$tmp/rift"
    mkdir -p "$d/streams"
    RIFT_BENCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    export RIFT_BENCH_TOKEN
    # Same limits as the NATS side: deep subscriber queues (the Go client is
    # told to keep every pending message), streams big enough for a run.
    cat >"$d/rift.lua" <<EOF
-- written by bench/compare.sh
return {
  messaging = {
    listen = "127.0.0.1:0",
    certificate = "$tmp/tls/server-cert.pem",
    private_key = "$tmp/tls/server-key.pem",
    subscription_capacity = 1000000,
    max_streams_per_connection = 4096,
    principals = {
      { name = "bench", token_env = "RIFT_BENCH_TOKEN",
        publish = { "bench.>", "_INBOX.>" },
        subscribe = { "bench.>", "_INBOX.>" } },
    },
    streams = {
      bench_sync = { subjects = { "bench.sync.>" }, sync_on_write = true,
        storage_path = "$d/streams/bench_sync",
        max_messages = 10000000, max_bytes = 4294967296 },
      bench_nosync = { subjects = { "bench.nosync.>" }, sync_on_write = false,
        storage_path = "$d/streams/bench_nosync",
        max_messages = 10000000, max_bytes = 4294967296 },
    },
  },
}
EOF
    (cd "$d" && exec "${server_pin[@]}" "$riftd_bin" -c "$d/rift.lua" \
        >"$d/riftd.log" 2>&1) &
    rift_pid=$!
    pids+=("$rift_pid")
    rift_addr=$(wait_log "$d/riftd.log" 'messaging QUIC on [0-9.]+:[0-9]+' |
        sed 's/.* on //') || {
        rift_status="skipped: riftd did not start: $(tail -3 "$d/riftd.log" | tr '\n' ' ')"
        return 1
    }
    # listen = "127.0.0.1:0": only the bound port is of any use.
    if [ "${rift_addr##*:}" = 0 ]; then
        rift_status="skipped: riftd logged $rift_addr, not the port it bound"
        return 1
    fi
}

# The connection flags of `rift bench`: the only place to change if the CLI
# spells them differently.
rift_conn_args() {
    echo --server "$rift_addr" --server-name localhost --ca "$tmp/tls/ca.pem" \
        --token-env RIFT_BENCH_TOKEN
}

# run_rift ROWSPEC MSGS — one measurement, one CSV row (impl=rift).
run_rift() {
    local spec="$1" msgs="$2" id dur args extra=()
    id=$(row_field "$spec" 1)
    dur=$(row_field "$spec" 3)
    args=$(row_field "$spec" 5)
    if [ "$dur" != "-" ]; then
        extra=(--stream "bench_$dur" --subject "bench.$dur.x")
    fi
    # shellcheck disable=SC2086,SC2046
    timeout 600 "${client_pin[@]}" "$rift_bin" bench $args --msgs "$msgs" \
        $(rift_conn_args) --server-pid "$rift_pid" --csv "$results" \
        --label "$id" "${extra[@]}" </dev/null
}

# ---- riftd-nats side: riftd's NATS listener, the nats-load client -----------
# Two riftd processes, as nats-server has one per transport: TLS 1.3 with
# the bench certificate, and plaintext (allowed on loopback only). NATS
# connections without credentials act as the bench principal (anonymous),
# since nats-load sends none. Its requesters need no _INBOX grant (a
# connection claims its inbox prefix); its responder answers with its own
# publish grant, hence `_INBOX.>` there (docs/riftd.md). Only the core
# rows: riftd has no JetStream.
declare -A rnats_url rnats_pid

# riftd_nats_config PLAIN [LUA [MESSAGING [PRINCIPAL]]] — the riftd-nats
# configuration (plaintext allowed or not), with LUA (more top-level keys),
# MESSAGING (more keys of the messaging table) and PRINCIPAL (more keys of
# the bench principal) added: the cluster rows'.
riftd_nats_config() {
    cat <<EOF
-- written by bench/compare.sh
return {
  messaging = {
    listen = "127.0.0.1:0",
    certificate = "$tmp/tls/server-cert.pem",
    private_key = "$tmp/tls/server-key.pem",
    subscription_capacity = 1000000,
    principals = {
      { name = "bench", token_env = "RIFT_BENCH_TOKEN",
        publish = { "bench.>", "_INBOX.>" }, subscribe = { "bench.>" },
        ${4:-} },
    },
${3:-}
  },
  nats = { listen = "127.0.0.1:0", allow_plaintext = $1,
           anonymous = "bench", write_deadline = 10 },
${2:-}
}
EOF
}

# start_riftd_nats tcp|tls
start_riftd_nats() {
    local t="$1" d="$tmp/riftd-nats-$1" plain=false scheme=tls
    [ "$t" = tcp ] && plain=true && scheme=nats
    mkdir -p "$d"
    riftd_nats_config "$plain" >"$d/rift.lua"
    (cd "$d" && exec "${server_pin[@]}" "$riftd_bin" -c "$d/rift.lua" \
        >"$d/riftd.log" 2>&1) &
    rnats_pid[$t]=$!
    pids+=("${rnats_pid[$t]}")
    local addr
    addr=$(wait_log "$d/riftd.log" 'rift: NATS on [0-9.]+:[0-9]+' |
        sed 's/.* on //') || {
        echo "compare.sh: riftd-nats-$t did not start: $(tail -3 "$d/riftd.log" | tr '\n' ' ')" >&2
        return 1
    }
    rnats_url[$t]="$scheme://$addr"
}

# run_riftd_nats TRANSPORT ROWSPEC MSGS — nats-load, unchanged, against
# riftd; its CSV rows say impl=nats, so they are relabelled riftd-nats.
run_riftd_nats() {
    local t="$1" spec="$2" msgs="$3" id args part="$tmp/riftd-nats.csv"
    local extra=() rc=0
    id=$(row_field "$spec" 1)
    args=$(row_field "$spec" 5)
    [ "$t" = tls ] && extra+=(--ca "$tmp/tls/ca.pem")
    rm -f "$part"
    # shellcheck disable=SC2086
    timeout 600 "${client_pin[@]}" "$gobin/nats-load" $args --msgs "$msgs" \
        --url "${rnats_url[$t]}" --server-pid "${rnats_pid[$t]}" \
        --csv "$part" --label "$id" --progress off "${extra[@]}" || rc=$?
    if [ -f "$part" ]; then
        grep -v '^impl,' "$part" | sed 's/^nats,/riftd-nats,/' >>"$results"
    fi
    return "$rc"
}

# ---- riftd-stan side: riftd's NATS Streaming service, the stan-load client ---
# The migration configuration of docs/streaming.md: the bench principal as
# the NATS face's anonymous principal, the STAN grants, a file store that
# syncs before every PubAck (as the synced JetStream rows). Every run of
# stan-load uses a channel of its own, hence the raised channel limit.
stan_url=""
stan_pid=""
stan_load="$root/build/release/bench/stan-load"

start_riftd_stan() {
    local d="$tmp/riftd-stan"
    mkdir -p "$d"
    [ -x "$stan_load" ] || {
        echo "compare.sh: riftd-stan left out: $stan_load was not built (libnats-dev missing?)" >&2
        return 1
    }
    cat >"$d/rift.lua" <<EOF
-- written by bench/compare.sh
return {
  data_dir = "$d/data",
  messaging = {
    principals = {
      { name = "bench", token_env = "RIFT_BENCH_TOKEN",
        publish = { "_STAN.>", "_INBOX.>" },
        subscribe = { "_INBOX.>", "_STAN.acks.>" } },
    },
  },
  nats = { listen = "127.0.0.1:0", allow_plaintext = true,
           anonymous = "bench", write_deadline = 10 },
  streaming = { store = "file", dir = "$d/stan", sync_on_write = true,
                limits = { max_channels = 10000, max_msgs = 10000000,
                           max_bytes = 4294967296 } },
}
EOF
    (cd "$d" && exec "${server_pin[@]}" "$riftd_bin" -c "$d/rift.lua" \
        >"$d/riftd.log" 2>&1) &
    stan_pid=$!
    pids+=("$stan_pid")
    local addr
    addr=$(wait_log "$d/riftd.log" 'rift: NATS on [0-9.]+:[0-9]+' |
        sed 's/.* on //') || {
        echo "compare.sh: riftd-stan did not start: $(tail -3 "$d/riftd.log" | tr '\n' ' ')" >&2
        return 1
    }
    stan_url="nats://$addr"
}

# run_riftd_stan ROWSPEC MSGS — stan-load against riftd; impl=riftd-stan.
run_riftd_stan() {
    local spec="$1" msgs="$2" id
    id=$(row_field "$spec" 1)
    # shellcheck disable=SC2086
    timeout 600 "${client_pin[@]}" "$stan_load" ${STAN_ARGS[$id]} \
        --msgs "$msgs" --url "$stan_url" --server-pid "$stan_pid" \
        --csv "$results" --label "$id"
}

# ---- cluster rows (issue 19) -----------------------------------------------
# Three nats-servers in one cluster and three riftd bridged to them (a
# `cluster` table each, with its NATS listener), all on this machine. The
# peer is the same nats-server cluster driven directly. Both sides run
# nats-load with the publisher (requester) on node 1 and the subscriber
# (responder) on node 3; server CPU is summed over every server process of
# the side (three nats-servers, or those and the three riftd), so its ratio
# is the cost of going through riftd. Started only for cluster-* rows.
declare -a cl_port cl_route cl_nats_url cl_nats_pid cl_riftd_url cl_riftd_pid
declare -a cl_riftd_quic
cluster_status=""

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start_cluster() {
    local i j d routes addr
    for i in 0 1 2; do
        cl_port[i]=$(free_port)
        cl_route[i]=$(free_port)
    done
    for i in 0 1 2; do
        d="$tmp/cluster-nats-$i"
        mkdir -p "$d"
        routes=""
        for j in 0 1 2; do
            [ "$j" = "$i" ] && continue
            routes="$routes${routes:+, }nats-route://127.0.0.1:${cl_route[j]}"
        done
        cat >"$d/nats.conf" <<EOF
server_name: bench-n$i
host: 127.0.0.1
port: ${cl_port[i]}
write_deadline: "10s"
cluster { name: rift-bench, host: 127.0.0.1, port: ${cl_route[i]}, routes: [$routes] }
jetstream { store_dir: "$d/js", max_memory_store: 256MB, max_file_store: 8GB }
EOF
        "${server_pin[@]}" nats-server -c "$d/nats.conf" -l "$d/nats.log" &
        cl_nats_pid[i]=$!
        pids+=("${cl_nats_pid[i]}")
        cl_nats_url[i]="nats://127.0.0.1:${cl_port[i]}"
    done
    for i in 0 1 2; do
        wait_log "$tmp/cluster-nats-$i/nats.log" 'Server is ready' >/dev/null || {
            cluster_status="nats-server cluster node $i did not start"
            return 1
        }
    done
    for i in 0 1 2; do
        d="$tmp/cluster-riftd-$i"
        mkdir -p "$d"
        riftd_nats_config true "  cluster = { node = \"bench-r$i\",
              nats = { servers = { \"${cl_nats_url[i]}\" } } }," \
            "    max_streams_per_connection = 4096,
    streams = { bench_r3 = { subjects = { \"bench.r3.>\" },
                             replicas = 3 } }," \
            'streams = { "bench_r3" },' >"$d/rift.lua"
        (cd "$d" && exec "${server_pin[@]}" "$riftd_bin" -c "$d/rift.lua" \
            >"$d/riftd.log" 2>&1) &
        cl_riftd_pid[i]=$!
        pids+=("${cl_riftd_pid[i]}")
    done
    for i in 0 1 2; do
        addr=$(wait_log "$tmp/cluster-riftd-$i/riftd.log" \
            'rift: NATS on [0-9.]+:[0-9]+' | sed 's/.* on //') || {
            cluster_status="cluster riftd $i did not start: $(tail -3 "$tmp/cluster-riftd-$i/riftd.log" | tr '\n' ' ')"
            return 1
        }
        cl_riftd_url[i]="nats://$addr"
        cl_riftd_quic[i]=$(wait_log "$tmp/cluster-riftd-$i/riftd.log" \
            'messaging QUIC on [0-9.]+:[0-9]+' | sed 's/.* on //')
    done
    # The replicated stream exists once a node made (or found) it in
    # JetStream: a JetStream meta leader must have been elected first.
    wait_log_long "$tmp/cluster-riftd-0/riftd.log" \
        'replicated stream bench_r3 is JetStream' >/dev/null ||
        echo "compare.sh: bench_r3 not ready; the cluster-stream row will fail" >&2
    cluster_status=ok
}

# wait_log_long FILE REGEX — wait_log for up to 60 s (an election).
wait_log_long() {
    local i
    for i in 1 2 3 4; do
        wait_log "$1" "$2" && return 0
    done
    return 1
}

# run_cluster_rift ROWSPEC MSGS — `rift bench` on node 1's riftd over QUIC
# (the cluster-stream row), server CPU of all six processes.
run_cluster_rift() {
    local spec="$1" msgs="$2" id args serverpids
    id=$(row_field "$spec" 1)
    args=$(row_field "$spec" 5)
    serverpids="$(IFS=,; echo "${cl_nats_pid[*]},${cl_riftd_pid[*]}")"
    # Every round from an empty stream, as the peer's (nats-load deletes
    # and recreates its stream): a purge keeps the sequence going.
    "$rift_bin" stream purge bench_r3 --server "${cl_riftd_quic[0]}" \
        --server-name localhost --ca "$tmp/tls/ca.pem" \
        --token-env RIFT_BENCH_TOKEN </dev/null || return 1
    # shellcheck disable=SC2086
    timeout 600 "${client_pin[@]}" "$rift_bin" bench $args --msgs "$msgs" \
        --server "${cl_riftd_quic[0]}" --server-name localhost \
        --ca "$tmp/tls/ca.pem" --token-env RIFT_BENCH_TOKEN \
        --server-pid "$serverpids" --csv "$results" --label "$id" \
        --stream bench_r3 --subject bench.r3.x </dev/null
}

# run_cluster direct|riftd ROWSPEC MSGS — one cross-node measurement; the
# riftd side's CSV rows are relabelled riftd-nats (as run_riftd_nats's).
run_cluster() {
    local side="$1" spec="$2" msgs="$3" id args part="$tmp/cluster.csv"
    local from to serverpids extra=() rc=0
    id=$(row_field "$spec" 1)
    args=$(row_field "$spec" 5)
    serverpids=$(IFS=,; echo "${cl_nats_pid[*]}")
    if [ "$side" = direct ]; then
        from=${cl_nats_url[0]} to=${cl_nats_url[2]}
    else
        from=${cl_riftd_url[0]} to=${cl_riftd_url[2]}
        serverpids="$serverpids,$(IFS=,; echo "${cl_riftd_pid[*]}")"
    fi
    case "$args" in
    req*) extra=(--responder-url "$to") ;;
    # The peer deduplicates as riftd does (a Nats-Msg-Id per publish, so a
    # retry is stored once), the cost of the guarantee on both sides.
    stream*) extra=(--stream bench_js_r3 --subject bench.js.x --replicas 3 --msg-id) ;;
    *) extra=(--sub-url "$to") ;;
    esac
    rm -f "$part"
    # shellcheck disable=SC2086
    timeout 600 "${client_pin[@]}" "$gobin/nats-load" $args --msgs "$msgs" \
        --url "$from" --server-pid "$serverpids" --csv "$part" \
        --label "$id" --progress off "${extra[@]}" || rc=$?
    if [ -f "$part" ]; then
        if [ "$side" = direct ]; then
            grep -v '^impl,' "$part" >>"$results"
        else
            grep -v '^impl,' "$part" | sed 's/^nats,/riftd-nats,/' >>"$results"
        fi
    fi
    return "$rc"
}

# ---- Ceilings -----------------------------------------------------------------
run_ceilings() {
    local m
    for m in gso gso-gro mmsg plain; do
        "$root/build/release/bench/udp_ceiling" --mode "$m" --seconds 1 \
            --csv "$results" --label "udp-$m" || true
    done
    "$root/build/release/bench/fsync_ceiling" --dir "$tmp" --seconds 1 \
        --csv "$results" --label fsync-4k || true
    for m in eventfd udp; do
        "$root/build/release/bench/wake_ceiling" --mode "$m" --seconds 1 \
            --csv "$results" --label "wake-$m" || true
    done
}

# ---- Environment record ---------------------------------------------------------
write_env() {
    local cpu mem fs
    cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
    mem=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
    fs=$(df -PT "$tmp" | awk 'NR == 2 { print $2 " on " $1 }')
    {
        echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "machine: $ncpu CPUs ($cpu), $mem"
        echo "kernel: $(uname -sr)"
        # shellcheck disable=SC1091
        echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"
        echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
        if [ "$contention" = 1 ]; then
            echo "contention: $ncpu busy-loop processes (one pinned per CPU, nice 0) during every measurement"
        else
            echo "contention: none"
        fi
        echo "nats-server: ${nats_version:-not run}"
        echo "NATS synced rows: $nats_sync"
        if [ -n "$cluster_status" ]; then
            if [ "$cluster_status" = ok ]; then
                echo "cluster rows: 3 nats-servers (one cluster) and 3 riftd bridged to them, node 1 -> node 3; server CPU summed over all server processes of a side"
            else
                echo "cluster rows: $cluster_status"
            fi
        fi
        echo "nats.go: $(dpkg-query -W -f='${Version}' golang-github-nats-io-go-nats-dev 2>/dev/null)"
        echo "go: $(go version | awk '{print $3}')"
        echo "rift: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown) ($rift_status)"
        echo "pinning: $pinning"
        echo "rounds: $rounds"
        echo "scale: $scale"
        echo "data directory: $fs"
        echo "command: $command_line"
    } >"$out/env.txt"
}

# ---- Measure --------------------------------------------------------------------
measure() {
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/rift-compare.XXXXXX")
    make_certs
    : >"$results"
    : >"$runlog"
    if [ "$want_nats" = 1 ]; then
        start_nats_all
    fi
    rift_status="left out (--no-rift)"
    if [ "$want_rift" = 1 ] && rift_check && start_rift; then
        echo "compare.sh: rift side on $rift_addr"
    elif [ "$want_rift" = 1 ]; then
        echo "compare.sh: rift side $rift_status; its columns will read n/a" >&2
    fi
    local rnats=()
    if [ "$rift_status" = ok ]; then
        start_riftd_nats tcp && rnats+=(riftd-nats-tcp)
        start_riftd_nats tls && rnats+=(riftd-nats-tls)
        # Only when a stan-* row is selected.
        # (grep without -q: an early exit would fail the pipe, pipefail)
        if selected_rows | grep '^stan-' >/dev/null; then
            start_riftd_stan && rnats+=(riftd-stan)
        fi
    fi
    if selected_rows | grep '^cluster-' >/dev/null; then
        if [ "$rift_status" != ok ] || [ "$want_nats" != 1 ]; then
            cluster_status="needs both sides (riftd and nats-server)"
        else
            start_cluster || true
        fi
        echo "compare.sh: cluster rows: $cluster_status"
    fi
    write_env

    local contenders=()
    [ "$rift_status" = ok ] && contenders+=(rift "${rnats[@]}")
    [ "$want_nats" = 1 ] && contenders+=(nats-tcp nats-tls)
    [ ${#contenders[@]} -gt 0 ] || die "nothing to measure"

    local spec id msgs r i k n=${#contenders[@]} c failures=0
    local nrows
    nrows=$(selected_rows | wc -l)
    k=0
    while IFS= read -r spec; do
        k=$((k + 1))
        id=$(row_field "$spec" 1)
        msgs=$(awk -v m="$(row_field "$spec" 4)" -v s="$scale" \
            'BEGIN { v = int(m * s); if (v < 100) v = 100; print v }')
        for r in $(seq 1 "$rounds"); do
            # Rotate who goes first so no contender always follows another.
            for i in $(seq 0 $((n - 1))); do
                c=${contenders[$(((i + r - 1) % n))]}
                # riftd has no JetStream: riftd-nats runs the core rows.
                if [[ "$c" == riftd-nats-* ]] && [ "$(row_field "$spec" 3)" != "-" ]; then
                    continue
                fi
                # cluster-* rows: the riftd-nats-tcp and nats-tcp columns,
                # on the cluster (run_cluster); cluster-stream: rift (QUIC,
                # the stream protocol) and nats-tcp (JetStream R3).
                if [[ "$id" == cluster-* ]]; then
                    [ "$cluster_status" = ok ] || continue
                    if [ "$id" = cluster-stream ]; then
                        [ "$c" = rift ] || [ "$c" = nats-tcp ] || continue
                    else
                        [ "$c" = riftd-nats-tcp ] || [ "$c" = nats-tcp ] || continue
                    fi
                # stan-* rows: riftd-stan against JetStream over TCP only;
                # riftd-stan runs nothing else.
                elif [[ "$id" == stan-* ]]; then
                    [ "$c" = riftd-stan ] || [ "$c" = nats-tcp ] || continue
                elif [ "$c" = riftd-stan ]; then
                    continue
                fi
                if [[ "$RIFT_ONLY" == *" $id "* ]] && [ "$c" != rift ]; then
                    continue
                fi
                printf '[%d/%d %s round %d/%d] %-8s ' "$k" "$nrows" "$id" \
                    "$r" "$rounds" "$c"
                {
                    echo "=== $id round $r $c msgs=$msgs"
                } >>"$runlog"
                local rc=0
                hog_start
                case "$id:$c" in
                cluster-*:riftd-nats-tcp) run_cluster riftd "$spec" "$msgs" >>"$runlog" 2>&1 || rc=$? ;;
                cluster-*:rift) run_cluster_rift "$spec" "$msgs" >>"$runlog" 2>&1 || rc=$? ;;
                cluster-*:nats-tcp) run_cluster direct "$spec" "$msgs" >>"$runlog" 2>&1 || rc=$? ;;
                *:rift) run_rift "$spec" "$msgs" >>"$runlog" 2>&1 || rc=$? ;;
                *:nats-tcp) run_nats tcp "$spec" "$msgs" >>"$runlog" 2>&1 || rc=$? ;;
                *:nats-tls) run_nats tls "$spec" "$msgs" >>"$runlog" 2>&1 || rc=$? ;;
                *:riftd-nats-tcp) run_riftd_nats tcp "$spec" "$msgs" >>"$runlog" 2>&1 || rc=$? ;;
                *:riftd-nats-tls) run_riftd_nats tls "$spec" "$msgs" >>"$runlog" 2>&1 || rc=$? ;;
                *:riftd-stan) run_riftd_stan "$spec" "$msgs" >>"$runlog" 2>&1 || rc=$? ;;
                esac
                hog_stop
                if [ "$rc" != 0 ]; then
                    failures=$((failures + 1))
                    echo "exit $rc (see $runlog)"
                else
                    tail -n 1 "$results" | awk -F, '{ printf "%.0f msg/s", $11;
                        if ($13 != "") printf ", %s p50 %s us", $13, $14; print "" }'
                fi
            done
        done
    done < <(selected_rows)
    echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/env.txt"
    echo "compare.sh: ceilings (loopback UDP, fdatasync, thread wake-ups; never under --contention)"
    run_ceilings
    [ "$failures" = 0 ] || echo "compare.sh: $failures run(s) failed or lost messages; see $runlog" >&2
}

if [ -z "$from_csv" ]; then
    measure
else
    [ "$from_csv" -ef "$results" ] || cp "$from_csv" "$results"
    [ -f "$out/env.txt" ] || echo "date: unknown" >"$out/env.txt"
fi

# ---- Summarise ------------------------------------------------------------------
rowsfile="$out/rows.tsv"
: >"$rowsfile"
while IFS= read -r spec; do
    id=$(row_field "$spec" 1)
    lat=no
    [[ " $LAT_ROWS " == *" $id "* ]] && lat=yes
    printf '%s\t%s\t%s\t%s\t%s\n' "$id" "$(row_field "$spec" 2)" \
        "$(row_field "$spec" 6)" "$lat" "$(row_field "$spec" 5)" >>"$rowsfile"
done < <(selected_rows)

"$gobin/perf-report" --csv "$results" --rows "$rowsfile" --env "$out/env.txt" \
    --md "$out/summary.md" --plots "$out/plots"
# (a selection of stan-* rows only has no charts)
(cd "$out/plots" && for g in *.gp; do [ -e "$g" ] && gnuplot "$g"; done; true)
echo
cat "$out/summary.md"
echo
echo "compare.sh: results in $out (results.csv, summary.md, plots/, runs.log)"

if [ "$report" = 1 ]; then
    doc="$root/docs/performance.md"
    [ -f "$doc" ] || die "$doc is missing"
    mkdir -p "$root/docs/perf"
    rm -f "$root"/docs/perf/*.svg
    cp "$out"/plots/*.svg "$root/docs/perf/"
    cp "$results" "$root/docs/perf/results.csv"
    cp "$out/env.txt" "$root/docs/perf/env.txt"
    # Replace only what lies between the markers; the prose stays.
    awk -v sum="$out/summary.md" '
        /<!-- BEGIN compare.sh results -->/ { print; while ((getline l < sum) > 0) print l; skip = 1; next }
        /<!-- END compare.sh results -->/ { skip = 0 }
        !skip { print }' "$doc" >"$doc.new"
    grep -q '<!-- END compare.sh results -->' "$doc.new" ||
        die "$doc lacks the results markers"
    mv "$doc.new" "$doc"
    echo "compare.sh: rewrote docs/performance.md results and docs/perf/"
fi
