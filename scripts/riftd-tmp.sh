# shellcheck shell=bash disable=SC2034 # variables are for the sourcing script
# scripts/riftd-tmp.sh — sourced by scripts/load.sh and scripts/soak.sh: a
# throw-away riftd on 127.0.0.1 with a port the system picks, in a private
# temporary directory, with development certificates (rift certs init) and
# a random token for one principal "load" allowed everything under load.>,
# soak.> and _INBOX.>.
#
#   riftd_tmp_start MESSAGING_EXTRA   starts riftd; MESSAGING_EXTRA is Lua
#                                     table fields added to `messaging`
#                                     (limits, streams). Sets riftd_dir,
#                                     riftd_pid, riftd_addr, riftd_ca and
#                                     exports RIFT_LOAD_TOKEN. An optional
#                                     second argument adds top-level
#                                     fields (e.g. limits).
#   riftd_tmp_stop                    SIGTERM, waits; returns riftd's status
#   riftd_tmp_cleanup                 kills riftd if still running, removes
#                                     the directory (unless RIFT_KEEP_TMP=1)
#
# Needs RIFTD and RIFT (paths of riftd and the rift CLI).

riftd_dir=""
riftd_pid=""
riftd_addr=""
riftd_ca=""

riftd_tmp_start() {
    riftd_dir=$(mktemp -d "${TMPDIR:-/tmp}/riftd-tmp.XXXXXX")
    chmod 700 "$riftd_dir"
    "$RIFT" certs init --dir "$riftd_dir/tls" >/dev/null ||
        { echo "riftd-tmp: rift certs init failed" >&2; return 1; }
    riftd_ca="$riftd_dir/tls/ca.pem"
    RIFT_LOAD_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    export RIFT_LOAD_TOKEN
    cat >"$riftd_dir/rift.lua" <<EOF
-- written by scripts/riftd-tmp.sh
return {
  log = "info",
  messaging = {
    listen = "127.0.0.1:0",
    certificate = "tls/server.pem",
    private_key = "tls/server.key",
    principals = {
      { name = "load", token_env = "RIFT_LOAD_TOKEN",
        publish = { "load.>", "soak.>", "_INBOX.>" },
        subscribe = { "load.>", "soak.>", "_INBOX.>" } },
    },
$1
  },
${2:-}
}
EOF
    # The bound address is logged at info ("rift: messaging QUIC on ...").
    (cd "$riftd_dir" && exec "$RIFTD" -c rift.lua \
        >"$riftd_dir/riftd.log" 2>&1) &
    riftd_pid=$!
    local _
    for _ in $(seq 1 300); do
        riftd_addr=$(grep -Eo 'messaging QUIC on [0-9.]+:[0-9]+' \
            "$riftd_dir/riftd.log" 2>/dev/null | head -1 | sed 's/.* on //' ||
            true)
        [ -n "$riftd_addr" ] && return 0
        kill -0 "$riftd_pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "riftd-tmp: riftd did not start:" >&2
    tail -5 "$riftd_dir/riftd.log" >&2
    return 1
}

riftd_tmp_stop() {
    [ -n "$riftd_pid" ] || return 0
    kill -TERM "$riftd_pid" 2>/dev/null || true
    local rc=0
    wait "$riftd_pid" || rc=$?
    riftd_pid=""
    return "$rc"
}

riftd_tmp_cleanup() {
    if [ -n "$riftd_pid" ]; then
        kill -KILL "$riftd_pid" 2>/dev/null || true
        wait "$riftd_pid" 2>/dev/null || true
        riftd_pid=""
    fi
    if [ -n "$riftd_dir" ] && [ "${RIFT_KEEP_TMP:-0}" != 1 ]; then
        rm -rf "$riftd_dir"
    elif [ -n "$riftd_dir" ]; then
        echo "riftd-tmp: kept $riftd_dir" >&2
    fi
}
