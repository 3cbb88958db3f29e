#!/usr/bin/env bash
# Pacing cost and throughput over loopback (issue 21, item 2; results in
# docs/performance.md, "Pacing with burst credit").
#
# For each binary given (e.g. a build before and after a change), RUNS
# interleaved rounds (binary 1 run 1, binary 2 run 1, ..., binary 1 run 2,
# ...), each round:
#   * paced: `perf client --cc bbr --bitrate RATE` for DURATION against a
#     `perf server --once`, both under /usr/bin/time: CPU cores used by
#     each side = (user + system seconds) / the client's duration_s;
#   * unpaced: `perf client` (CUBIC, no --bitrate) for DURATION: Gbit/s.
# A binary without `--bitrate` (a build before it existed) runs unpaced only.
# Prints one CSV line per run and the medians per binary.
#
# Usage: bench/paced-cpu.sh [--runs N] [--duration SECS] [--rate RATE] BIN...
#   BIN: peregrine binaries (default target/release/peregrine)
#   env PEREGRINE_PERF_FLAGS: extra flags for both sides (e.g. --insecure)
set -euo pipefail

runs=3
duration=10
rate=100Mbps
bins=()
while [ $# -gt 0 ]; do
    case "$1" in
    --runs) runs=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    -h | --help) sed -n 2,17p "$0"; exit 0 ;;
    *) bins+=("$1"); shift ;;
    esac
done
[ ${#bins[@]} -gt 0 ] || bins=(target/release/peregrine)
flags=${PEREGRINE_PERF_FLAGS:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# cpu_seconds FILE: user + system seconds from a /usr/bin/time -v report.
cpu_seconds() {
    awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {printf "%.3f", u+s}' "$1"
}

# one BIN MODE: run a server and a client; print "gbps,server_cores,client_cores".
one() {
    local bin=$1 mode=$2 extra=""
    [ "$mode" = paced ] && extra="--cc bbr --bitrate $rate"
    # A fresh file: reading a previous server's line would connect to a dead port.
    rm -f "$tmp/server.err"
    # shellcheck disable=SC2086
    /usr/bin/time -v -o "$tmp/server.time" "$bin" perf server --listen 127.0.0.1:0 --once $flags \
        2>"$tmp/server.err" &
    local spid=$!
    local port=""
    for _ in $(seq 100); do
        port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/server.err" 2>/dev/null | head -1)
        [ -n "$port" ] && break
        sleep 0.05
    done
    [ -n "$port" ] || { echo "server did not start: $(cat "$tmp/server.err")" >&2; exit 1; }
    # shellcheck disable=SC2086
    if ! /usr/bin/time -v -o "$tmp/client.time" "$bin" perf client --connect "127.0.0.1:$port" \
        --duration "${duration}s" --json $flags $extra >"$tmp/client.json" 2>"$tmp/client.err"; then
        kill "$spid" 2>/dev/null || true
        echo "client failed: $(tail -1 "$tmp/client.err")" >&2
        exit 1
    fi
    wait "$spid" || true
    python3 - "$tmp/client.json" "$(cpu_seconds "$tmp/server.time")" "$(cpu_seconds "$tmp/client.time")" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
d = r["duration_s"]
print(f'{r["throughput_bps"] / 1e9:.4f},{float(sys.argv[2]) / d:.4f},{float(sys.argv[3]) / d:.4f}')
EOF
}

echo "binary,mode,run,gbps,server_cores,client_cores"
for run in $(seq "$runs"); do
    for bin in "${bins[@]}"; do
        for mode in paced unpaced; do
            # A build without --bitrate (before the change) runs unpaced only.
            if [ "$mode" = paced ] && ! "$bin" perf client --help | grep -q -- --bitrate; then
                continue
            fi
            line=$(one "$bin" "$mode") || exit 1
            echo "$bin,$mode,$run,$line" | tee -a "$tmp/all.csv"
        done
    done
done
echo
echo "medians:"
python3 - "$tmp/all.csv" <<'EOF'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
keys = sorted({(r[0], r[1]) for r in rows})
for b, m in keys:
    sel = [r for r in rows if (r[0], r[1]) == (b, m)]
    med = lambda i: statistics.median(float(r[i]) for r in sel)
    print(f"{b} {m}: {med(3):.3f} Gbit/s, server {med(4):.3f} cores, client {med(5):.3f} cores ({len(sel)} runs)")
EOF
