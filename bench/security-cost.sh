#!/bin/bash
# The cost of packet protection on `peregrine perf` over loopback
# (docs/security.md, "What encryption costs"): 5 rounds, each running the
# default (Noise_XX), a pinned server key (Noise_IK) and --insecure for 5 s,
# alternated so machine load hits all three alike. Prints one line per run
# and the medians. Needs a release build: cargo build --release -p peregrine-cli
# KEY_UPDATE_BYTES=N adds a fourth mode, `ku`: the default Noise_XX with a
# key update every N bytes (`perf client --key-update-bytes N`; issue 37).
# ROUNDS=n changes the number of rounds (default 5).
set -u
P=${PEREGRINE:-$(dirname "$0")/../target/release/peregrine}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
"$P" keygen --out "$DIR/srv.key" >/dev/null
run() { # label, server flags, client flags
  local label=$1 sflags=$2 cflags=$3
  "$P" perf server --listen 127.0.0.1:0 --once $sflags 2>"$DIR/srv.err" &
  local spid=$!
  for _ in $(seq 1 50); do grep -q 'listening on' "$DIR/srv.err" 2>/dev/null && break; sleep 0.1; done
  local addr
  addr=$(grep -o 'listening on [^ ]*' "$DIR/srv.err" | awk '{print $3}')
  "$P" perf client --connect "$addr" --duration 5s --json $cflags 2>/dev/null \
    | python3 -c 'import json,sys; v=json.load(sys.stdin); print(sys.argv[1], v["throughput_bps"], v["security"].get("key_updates", 0))' "$label"
  wait "$spid" 2>/dev/null
}
for _ in $(seq 1 "${ROUNDS:-5}"); do
  run xx "" ""
  if [ -n "${KEY_UPDATE_BYTES:-}" ]; then
    run ku "" "--key-update-bytes $KEY_UPDATE_BYTES"
  fi
  run ik "--key $DIR/srv.key" "--peer-key $DIR/srv.key.pub"
  run insecure "--insecure" "--insecure"
done | tee "$DIR/runs.txt"
python3 - "$DIR/runs.txt" <<'PY'
import statistics, sys
runs = {}
updates = {}
for line in open(sys.argv[1]):
    label, bps, ku = line.split()
    runs.setdefault(label, []).append(float(bps) / 1e6)
    updates.setdefault(label, []).append(int(ku))
base = statistics.median(runs["insecure"])
for label, v in runs.items():
    m = statistics.median(v)
    extra = ""
    if label == "ku":
        extra = f"  ratio to xx {m / statistics.median(runs['xx']):.3f}  key updates per run {statistics.median(updates[label]):.0f}"
    print(f"{label:9} median {m:8.1f} Mbit/s  ratio to insecure {m / base:.2f}{extra}")
PY
