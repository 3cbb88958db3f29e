#!/usr/bin/env bash
# AQM on the bottleneck (issue 41): one CUBIC flow through
# scenarios/dumbbell-aqm.toml (20 Mbit/s, 40 ms round trip, 4-BDP buffer)
# under drop-tail, CoDel, FQ-CoDel, PIE and DualPI2 (each at its defaults;
# the core sends ECT(0), so the AQMs whose `ecn` defaults to true —
# fq_codel, dualpi2 — mark instead of dropping). Per model: goodput and the
# queueing delay p50/p99 — the one-way DATA delay quantiles of
# summary.json minus the empty path's delay, BASE_MS (default 20.81 ms:
# 2 × 0.1 ms + 20 ms propagation, a 1,465-byte packet serialised once at
# 20 Mbit/s and twice at 1 Gbit/s) — over the whole run and over the
# packets received after the start-up (`metrics.warmup`, WARMUP, default
# 2 s: slow start's overshoot, which an AQM needs an interval or more to
# answer, is over by then — docs/scenarios.md "AQM and slow start"), and
# the bottleneck's CE marks and AQM drops. Simulated (deterministic), so
# one run per model; the wall time is the only noisy figure.
#
# Usage: bench/aqm-dumbbell.sh [BIN]   (default target/release/peregrine)
# env MODELS (default "drop_tail codel fq_codel pie dualpi2"), DUR (30s),
# WARMUP (2s), EXTRA (more --set flags, e.g. "--set links.1.aqm.ecn=true"),
# CUBIC (default "sltp": the scenario's CUBIC, SLTP's defaults; "linux":
# the field's CUBIC, as `peregrine reproduce aqm` runs it — Linux's HyStart
# exit and TCP's delayed ACK, `--set flows.0.ack_policy=tcp --set
# flows.0.cc_options.slow_start_exit=linux_hystart`).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/peregrine}
MODELS=${MODELS:-"drop_tail codel fq_codel pie dualpi2"}
DUR=${DUR:-30s}
WARMUP=${WARMUP:-2s}
BASE_MS=${BASE_MS:-20.81}
EXTRA=${EXTRA:-}
CUBIC=${CUBIC:-sltp}
case $CUBIC in
    sltp) ;;
    linux) EXTRA="--set flows.0.ack_policy=tcp --set flows.0.cc_options.slow_start_exit=linux_hystart $EXTRA" ;;
    *) echo "CUBIC must be sltp or linux, not '$CUBIC'" >&2; exit 2 ;;
esac
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs; $DUR simulated; CUBIC=$CUBIC; $(date -u +%FT%TZ)"
echo
echo "| aqm | goodput Mbit/s | queueing p50 ms | queueing p99 ms | p50 after $WARMUP | p99 after $WARMUP | CE marked | AQM drops | queue drops | wall s |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for m in $MODELS; do
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$BIN" sim scenarios/dumbbell-aqm.toml --set duration="$DUR" \
        --set metrics.warmup="\"$WARMUP\"" \
        --set "links.1.aqm.model=\"$m\"" $EXTRA --out "$TMP/$m" --no-plots -q >/dev/null
    t1=$(date +%s.%N)
    python3 - "$TMP/$m/summary.json" "$m" "$BASE_MS" "$(echo "$t1 - $t0" | bc)" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
m, base, wall = sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
f = s["flows"][0]
up = next(l for l in s["links"] if l["name"] == "bottleneck/up")
d = f["delay_ms"]
w = d["after_warmup"]
print(f"| {m} | {f['goodput_bps'] / 1e6:.2f} | {d['p50'] - base:.1f} | {d['p99'] - base:.1f} "
      f"| {w['p50'] - base:.1f} | {w['p99'] - base:.1f} "
      f"| {up.get('ce_marked', 0)} | {up.get('aqm_dropped', 0)} | {up['queue_drops']} | {wall:.1f} |")
PY
done
