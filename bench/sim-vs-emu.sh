#!/usr/bin/env bash
# The simulator against reality (docs/validation.md): the same link —
# a Mahimahi trace as the uplink, 50 Mbit/s downlink for the ACKs, 20 ms
# each way, a 1-BDP drop-tail queue — run by
#   * `peregrine sim` (one bulk flow, 1452-byte datagrams, unencrypted), and
#   * `peregrine perf` (the real UDP runtime, --insecure) through
#     `peregrine emu` with the same link flags,
# for three traces × CUBIC, BBR, NewReno; then kernel TCP (iperf3 -C
# reno|cubic|bbr) over the same emulated link. Prints goodput and the
# data packets' one-way delay p50/p95 side by side with the ratios.
# Emulator delays come from its --log (time in the uplink + 20 ms).
# Needs root, iperf3, python3. About 6 minutes with the default DUR=15 (s).
set -euo pipefail
cd "$(dirname "$0")/.."
# 15 s: the ATT trace goes down for 10 s at 20 s, where perf then times
# out waiting for the server's report (a perf limit, not a link one).
DUR=${DUR:-15}
TRACES=${TRACES:-"../shared/traces/mahimahi/ATT-LTE-driving.down ../shared/traces/mahimahi/Verizon-LTE-short.down ../shared/traces/mahimahi/TMobile-LTE-driving.down"}
CCS=${CCS:-"cubic bbr newreno"}
export CARGO_PROFILE_DEV_DEBUG=0
cargo build --release -q -p peregrine-cli
export PEREGRINE=$PWD/target/release/peregrine
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs; ${DUR} s per run"
LINK="--downlink 50Mbps --delay 20ms --queue bdp=1"

delays() { # LOG → "p50 p95" of the uplink's one-way delay (ms)
  python3 - "$1" <<'EOF'
import sys
d = sorted(int(l.split()[4]) / 1e6 + 20.0 for l in open(sys.argv[1]) if l.startswith("u ") and " - " in l)
q = lambda p: d[min(len(d) - 1, int(round(p * (len(d) - 1))))] if d else float("nan")
print(f"{q(0.5):.1f} {q(0.95):.1f}")
EOF
}

printf "%-28s %-8s %10s %10s %6s  %15s %15s\n" trace cc "sim Mb/s" "emu Mb/s" ratio "sim p50/p95 ms" "emu p50/p95 ms"
for trace in $TRACES; do
  tabs=$(realpath "$trace")
  name=$(basename "$trace")
  for cc in $CCS; do
    cat > "$TMP/s.toml" <<EOF
name = "sim-vs-emu"
duration = "${DUR}s"
seed = 1
[[links]]
name = "emu"
a = "client"
b = "server"
delay = "20ms"
queue = { bdp = 1.0 }
up = { trace = "$tabs" }
down = { rate = "50Mbps" }
[[flows]]
src = "client"
dst = "server"
cc = "$cc"
payload_bytes = 1415
[[flows.streams]]
app = "bulk"
EOF
    "$PEREGRINE" sim "$TMP/s.toml" --out "$TMP/sim" > /dev/null
    read -r sg sp50 sp95 < <(python3 -c "
import json; f = json.load(open('$TMP/sim/summary.json'))['flows'][0]
print(f['goodput_bps'] / 1e6, f['delay_ms']['p50'], f['delay_ms']['p95'])")
    unshare -n sh -c "
      \"\$PEREGRINE\" perf server --listen 0.0.0.0:4433 --insecure --once 2>/dev/null &
      sleep 0.3
      \"\$PEREGRINE\" emu --uplink $tabs $LINK --log $TMP/emu.log -- \
        sh -c '\"\$PEREGRINE\" perf client --connect \$PEREGRINE_EMU_HOST:4433 --insecure --cc $cc --duration ${DUR}s --json'
      wait" > "$TMP/perf.json" 2>/dev/null
    eg=$(python3 -c "import json; print(json.load(open('$TMP/perf.json'))['throughput_bps'] / 1e6)" 2>/dev/null ||
      echo nan)
    read -r ep50 ep95 < <(delays "$TMP/emu.log")
    printf "%-28s %-8s %10.2f %10.2f %6.2f  %7.1f/%-7.1f %7.1f/%-7.1f\n" "$name" "$cc" "$sg" "$eg" \
      "$(python3 -c "print(float('$eg') / $sg if $sg else float('nan'))")" "$sp50" "$sp95" "$ep50" "$ep95"
  done
done

echo
echo "kernel TCP (iperf3 -C, ${DUR} s) over the same emulated links"
printf "%-28s %-8s %10s  %15s\n" trace cc "Mb/s" "p50/p95 ms"
for trace in $TRACES; do
  tabs=$(realpath "$trace")
  for cc in reno cubic bbr; do
    unshare -n sh -c "
      iperf3 -s -D -1 >/dev/null; sleep 0.3
      \"\$PEREGRINE\" emu --uplink $tabs $LINK --log $TMP/tcp.log -- \
        sh -c 'iperf3 -c \$PEREGRINE_EMU_HOST -C $cc -t $DUR -f m'" > "$TMP/iperf.txt" 2>&1
    g=$(sed -n 's/.* \([0-9.]*\) Mbits\/sec .*receiver/\1/p' "$TMP/iperf.txt")
    read -r p50 p95 < <(delays "$TMP/tcp.log")
    printf "%-28s %-8s %10s  %7.1f/%-7.1f\n" "$(basename "$trace")" "$cc" "${g:-?}" "$p50" "$p95"
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
