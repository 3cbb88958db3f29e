#!/usr/bin/env bash
# Pacing finer than a millisecond (issue 35, docs/validation.md): the gaps
# between a paced sender's datagrams as `peregrine emu --log` sees them
# arrive at the uplink (before the bottleneck), and the sender's CPU.
#
# For each binary and each rate R (20, 100, 500 Mbit/s): BBR (`perf client
# --cc bbr`, a paced controller) for DUR seconds through `peregrine emu
# --uplink R --downlink R --delay 10ms --queue bdp=1 --log`. From the
# log's uplink arrivals of data datagrams after the first second:
# the median gap, the gap one packet takes at R (BBR cruises at the
# bottleneck rate 6 phases out of 8), p10/p90 of the gaps and the share
# within ±10 % of that; and the client's CPU (user + system seconds from
# /usr/bin/time over the run's duration). Runs are interleaved (binary 1
# rate 1, binary 2 rate 1, …), RUNS rounds.
#
# Usage: bench/pacing-gaps.sh [BIN...]   (default target/release/peregrine)
# env RATES (default "20 100 500"), DUR (default 5), RUNS (default 1).
# Needs root (network namespaces, TUN), python3.
set -euo pipefail
cd "$(dirname "$0")/.."
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=(target/release/peregrine)
RATES=${RATES:-"20 100 500"}
DUR=${DUR:-5}
RUNS=${RUNS:-1}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs; ${DUR} s per run; $(date -u +%FT%TZ)"
echo
echo "| binary | Mbit/s | goodput Mbit/s | median gap µs | one packet at R µs | p10 / p90 µs | gaps within ±10 % | client CPU % |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for _ in $(seq "$RUNS"); do
  for rate in $RATES; do
    for bin in "${bins[@]}"; do
      bin=$(realpath "$bin")
      PEREGRINE=$bin unshare -n sh -c "
        ip link set lo up
        \"\$PEREGRINE\" perf server --listen 0.0.0.0:4433 --insecure --once 2>/dev/null &
        sleep 0.3
        \"\$PEREGRINE\" emu --uplink ${rate}Mbps --downlink ${rate}Mbps --delay 10ms --queue bdp=1 --log $TMP/emu.log -- \
          sh -c '/usr/bin/time -f \"%U %S\" -o $TMP/time.txt \"\$PEREGRINE\" perf client --connect \$PEREGRINE_EMU_HOST:4433 --insecure --cc bbr --duration ${DUR}s --json'
        wait" > "$TMP/perf.json" 2>/dev/null || true
      python3 - "$TMP/emu.log" "$TMP/perf.json" "$TMP/time.txt" "$rate" "$DUR" "$(basename "$bin")" <<'EOF'
import json, statistics, sys
log, perf, timef, rate, dur, name = sys.argv[1:]
rate, dur = float(rate) * 1e6, float(dur)
arr = [(int(l.split()[1]), int(l.split()[3])) for l in open(log)
       if l.startswith("u ") and " + " in l]
# The data datagrams: the most common size of 1,000 bytes or more (path
# MTU discovery may leave them at its 1,200-byte base).
sizes = [b for _, b in arr if b >= 1000]
size = max(set(sizes), key=sizes.count) if sizes else 1500
t = [x for x, b in arr if b == size]
t = [x for x in t if x >= t[0] + 1_000_000_000] if t else []
gaps = sorted((b - a) / 1e3 for a, b in zip(t, t[1:]))
one = size * 8 / rate * 1e6
try:
    goodput = json.load(open(perf))["throughput_bps"] / 1e6
except Exception:
    goodput = float("nan")
try:
    u, s = map(float, open(timef).read().split()[-2:])
    cpu = (u + s) / dur * 100
except Exception:
    cpu = float("nan")
q = lambda p: gaps[min(len(gaps) - 1, int(p * (len(gaps) - 1)))] if gaps else float("nan")
within = sum(abs(g - one) <= 0.1 * one for g in gaps) / len(gaps) * 100 if gaps else float("nan")
med = statistics.median(gaps) if gaps else float("nan")
print(f"| {name} | {rate / 1e6:.0f} | {goodput:.1f} | {med:.1f} | {one:.1f} | {q(0.1):.1f} / {q(0.9):.1f} | {within:.0f} % | {cpu:.0f} |")
EOF
    done
  done
done
echo
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
