#!/usr/bin/env bash
# Link hints live vs simulated (issue 38 item 5, docs/validation.md "Link
# hints: RTW-TCP over real UDP"): a bulk flow through `peregrine emu` with
# scheduled outages announced --hint-lead ahead, for RTW-TCP with the hints
# (`perf --hints emu`), RTW-TCP without, CUBIC and BBR; and the same link
# in `peregrine sim`, whose hinted rows give the link the same hint plan
# (`links.N.hints`, crates/sim/src/world/hint_plan.rs). Prints goodput,
# hints applied/received (simulator: delivered) and the data packets'
# one-way delay p50/p95 side by side (emulator: time in the uplink from
# --log + the propagation delay; simulator: summary.json delay_ms).
#
# Links (each direction; outages on both):
#   rate:  12 Mbit/s both ways, 20 ms, 1-BDP queue
#   trace: a Mahimahi trace as the uplink, 50 Mbit/s downlink, 20 ms, 1 BDP
# Outages: OUT_MS every 5 s from 5 s on, announced LEAD_MS ahead.
# Needs root, python3. DUR=60 s per run: about 17 minutes for the default
# OUTS="300 190" × LINKS="rate trace" (12-16 emulated runs).
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DUR:-60}
LEAD_MS=${LEAD_MS:-100}
OUTS=${OUTS:-"300 190"}
LINKS=${LINKS:-"rate trace"}
TRACE=${TRACE:-../shared/traces/mahimahi/Verizon-LTE-short.down}
VARIANTS=${VARIANTS:-"rtwtcp+hints rtwtcp cubic bbr"}
PEREGRINE=${PEREGRINE:-}
if [ -z "$PEREGRINE" ]; then
  export CARGO_PROFILE_DEV_DEBUG=0
  cargo build --release -q -p peregrine-cli
  PEREGRINE=$PWD/target/release/peregrine
fi
export PEREGRINE
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs; ${DUR} s per run; lead ${LEAD_MS} ms"

delays() { # LOG → "p50 p95" of the uplink's one-way delay (ms)
  python3 - "$1" <<'EOF'
import sys
d = sorted(int(l.split()[4]) / 1e6 + 20.0 for l in open(sys.argv[1]) if l.startswith("u ") and " - " in l)
q = lambda p: d[min(len(d) - 1, int(round(p * (len(d) - 1))))] if d else float("nan")
print(f"{q(0.5):.1f} {q(0.95):.1f}")
EOF
}

printf "%-6s %-7s %-13s %9s %9s %6s %9s %9s  %13s %13s\n" link outage variant "sim Mb/s" "emu Mb/s" ratio "sim hints" "emu hints" "sim p50/p95" "emu p50/p95"
for out in $OUTS; do
  flags=""
  windows=""
  s=5000
  while [ $((s + out)) -lt $((DUR * 1000)) ]; do
    flags="$flags --outage ${s}ms-$((s + out))ms"
    windows="$windows{ start = \"${s}ms\", end = \"$((s + out))ms\" },"
    s=$((s + 5000))
  done
  for link in $LINKS; do
    if [ "$link" = rate ]; then
      emu_link="--uplink 12Mbps --downlink 12Mbps"
      sim_dirs='up = { rate = "12Mbps" }
down = { rate = "12Mbps" }'
    else
      tabs=$(realpath "$TRACE")
      emu_link="--uplink $tabs --downlink 50Mbps"
      sim_dirs="up = { trace = \"$tabs\" }
down = { rate = \"50Mbps\" }"
    fi
    for v in $VARIANTS; do
      cc=${v%+hints}
      hints=""
      [ "$v" != "$cc" ] && hints="--hints emu"
      sim_hints=""
      [ -n "$hints" ] && sim_hints="hints = { lead = \"${LEAD_MS}ms\" }"
      cat > "$TMP/s.toml" <<EOF
name = "hints-vs-sim"
duration = "${DUR}s"
seed = 1
[[links]]
name = "emu"
a = "client"
b = "server"
delay = "20ms"
queue = { bdp = 1.0 }
outages = { scheduled = [ $windows ] }
$sim_hints
$sim_dirs
[[flows]]
src = "client"
dst = "server"
cc = "$cc"
payload_bytes = 1415
[[flows.streams]]
app = "bulk"
EOF
      "$PEREGRINE" sim "$TMP/s.toml" --out "$TMP/sim" > /dev/null
      read -r sg sp50 sp95 shints < <(python3 -c "
import json; f = json.load(open('$TMP/sim/summary.json'))['flows'][0]
print(f['goodput_bps'] / 1e6, f['delay_ms']['p50'], f['delay_ms']['p95'], f.get('loss_attribution', {}).get('hints', '-'))")
      unshare -n sh -c "
        ip link set lo up
        \"\$PEREGRINE\" perf server --listen 0.0.0.0:4433 --insecure --once 2>/dev/null &
        sleep 0.3
        \"\$PEREGRINE\" emu $emu_link --delay 20ms --queue bdp=1 $flags --hint-lead ${LEAD_MS}ms \
          --log $TMP/emu.log -- \
          sh -c '\"\$PEREGRINE\" perf client --connect \$PEREGRINE_EMU_HOST:4433 --insecure --cc $cc --duration ${DUR}s -i 0 --json $hints'
        wait" > "$TMP/perf.json" 2>/dev/null || true
      read -r eg applied < <(python3 -c "
import json
d = json.load(open('$TMP/perf.json'))
h = d.get('hints') or {}
print(d['throughput_bps'] / 1e6, f\"{h.get('applied', '-')}/{h.get('received', '-')}\" if h else '-')" 2>/dev/null ||
        echo "nan -")
      read -r ep50 ep95 < <(delays "$TMP/emu.log")
      printf "%-6s %-7s %-13s %9.2f %9.2f %6.2f %9s %9s  %6.1f/%-6.1f %6.1f/%-6.1f\n" "$link" "${out}ms" "$v" \
        "$sg" "$eg" "$(python3 -c "print(float('$eg') / float('$sg') if float('$sg') > 0 else float('nan'))")" \
        "$shints" "$applied" "$sp50" "$sp95" "$ep50" "$ep95"
    done
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
