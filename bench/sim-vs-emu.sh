#!/usr/bin/env bash
# The simulator against the emulator (docs/validation.md, issue 35): the
# same link run by
#   * `peregrine sim` (the link as a scenario, one bulk flow, 1452-byte
#     datagrams, unencrypted), and
#   * `peregrine perf` (the real UDP runtime, --insecure) through
#     `peregrine emu --link SCENARIO:links.0` — the emulator serves the
#     scenario's own link (rates, delay, queue, loss draws),
# for every controller × start-up × random loss, RUNS runs each: run k
# is seed k in both (the simulator's loss draws, and the emulator's from
# the same scenario), and the medians are compared; then kernel TCP (iperf3 -C reno|cubic|bbr, where the
# kernel has them) over the same emulated links.
#
# Links (LINKS, space-separated):
#   issue35   20 Mbit/s up, 5 Mbit/s down, 20 ms each way, 1-BDP queue
#   TRACE     a Mahimahi trace as the uplink, 50 Mbit/s down for the
#             ACKs, 20 ms each way, 1-BDP queue (any path to a trace)
# Loss (LOSSES): Bernoulli probability of each direction.
#
# perf runs with PERF_FLAGS (default "--pmtud off"): the scenario has no
# `mtu`, so the simulator sends fixed-size datagrams; the runtime's
# default path MTU discovery cuts messages for 1,200-byte datagrams and,
# on a lossy link, costs far more than that (docs/validation.md) — set
# PERF_FLAGS= to measure the runtime's defaults instead.
#
# Filters (environment): LINKS, LOSSES, CCS, STARTUPS, RUNS, DUR, TCP
# (0: no kernel TCP), SLTP (0: kernel TCP only). --quick: issue35, loss 0.01, cubic bbr newreno,
# slow-start, 1 run, 8 s. Output: one Markdown table row per case
# (median goodput sim / emu and their ratio, emu runs), so the table can
# go to docs/validation.md as is. Needs root, iperf3 (for TCP), python3.
# The full matrix (4 links × 3 losses × 16 controllers × 2 start-ups ×
# 3 runs × 8 s) takes about 3 h; the issue35 link alone about 50 min.
set -euo pipefail
cd "$(dirname "$0")/.."
TRACE_DIR=../shared/traces/mahimahi
ALL_CCS=""
if [ "${1:-}" = "--quick" ]; then
  : "${LINKS:=issue35}" "${LOSSES:=0.01}" "${CCS:=cubic bbr newreno}" "${STARTUPS:=slow-start}" "${RUNS:=1}"
fi
LINKS=${LINKS:-"issue35 $TRACE_DIR/ATT-LTE-driving.down $TRACE_DIR/Verizon-LTE-short.down $TRACE_DIR/TMobile-LTE-driving.down"}
LOSSES=${LOSSES:-"0 0.01 0.03"}
STARTUPS=${STARTUPS:-"slow-start packet-pair"}
RUNS=${RUNS:-3}
DUR=${DUR:-8}
TCP=${TCP:-1}
PERF_FLAGS=${PERF_FLAGS---pmtud off}
if [ -z "${PEREGRINE:-}" ]; then
  export CARGO_PROFILE_DEV_DEBUG=0
  cargo build --release -q -p peregrine-cli
  export PEREGRINE=$PWD/target/release/peregrine
fi
export PEREGRINE
CCS=${CCS:-$("$PEREGRINE" cc list | tr '\n' ' ')}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs; ${DUR} s per run, ${RUNS} runs; perf flags: ${PERF_FLAGS:-none}; $(date -u +%FT%TZ)"

scenario() { # LINK LOSS CC STARTUP FILE [SEED]
  local up down
  if [ "$1" = issue35 ]; then
    up='{ rate = "20Mbps" }'
    down='{ rate = "5Mbps" }'
  else
    up="{ trace = \"$(realpath "$1")\" }"
    down='{ rate = "50Mbps" }'
  fi
  local startup=${4//-/_}
  cat > "$5" <<EOF
name = "sim-vs-emu"
duration = "${DUR}s"
seed = ${6:-1}
[[links]]
name = "emu"
a = "client"
b = "server"
delay = "20ms"
queue = { bdp = 1.0 }
loss = { model = "bernoulli", p = $2 }
up = $up
down = $down
[[flows]]
src = "client"
dst = "server"
cc = "$3"
startup = "$startup"
payload_bytes = 1415
[[flows.streams]]
app = "bulk"
EOF
}

median() { python3 -c "import sys,statistics; v=[float(x) for x in sys.argv[1:] if x!='nan']; print(f'{statistics.median(v):.2f}' if v else 'nan')" "$@"; }

SLTP=${SLTP:-1}
[ "$SLTP" = 0 ] && CCS=" "
echo
echo "| link | loss | cc | start-up | sim Mbit/s (median) | emu Mbit/s (median) | emu/sim | emu runs | probe (emu, last run) |"
echo "|---|---:|---|---|---:|---:|---:|---|---|"
for link in $LINKS; do
  name=$( [ "$link" = issue35 ] && echo issue35 || basename "$link")
  for loss in $LOSSES; do
    for cc in $CCS; do
      for startup in $STARTUPS; do
        runs=()
        sims=()
        probe=-
        for seed in $(seq "$RUNS"); do
          scenario "$link" "$loss" "$cc" "$startup" "$TMP/s.toml" "$seed"
          "$PEREGRINE" sim "$TMP/s.toml" --out "$TMP/sim" > /dev/null
          sims+=("$(python3 -c "import json; print(json.load(open('$TMP/sim/summary.json'))['flows'][0]['goodput_bps'] / 1e6)")")
          unshare -n sh -c "
            ip link set lo up
            \"\$PEREGRINE\" perf server --listen 0.0.0.0:4433 --insecure --once 2>/dev/null &
            srv=\$!
            sleep 0.3
            \"\$PEREGRINE\" emu --link $TMP/s.toml:links.0 -- \
              sh -c '\"\$PEREGRINE\" perf client --connect \$PEREGRINE_EMU_HOST:4433 --insecure --cc $cc --startup $startup --duration ${DUR}s --json $PERF_FLAGS'
            kill \$srv 2>/dev/null; wait" > "$TMP/perf.json" 2>/dev/null || true
          read -r eg probe < <(python3 -c "
import json
try:
    d = json.load(open('$TMP/perf.json'))
    p = d.get('probe') or {}
    pr = '-' if not p else f\"{p.get('decision')}:{p.get('reason')}:{(p.get('bandwidth_bps') or 0) / 1e6:.1f}Mb/s\"
    print(f\"{d['throughput_bps'] / 1e6:.2f}\", pr)
except Exception:
    print('nan -')")
          runs+=("$eg")
        done
        em=$(median "${runs[@]}")
        sg=$(median "${sims[@]}")
        ratio=$(python3 -c "print(f'{float(\"$em\") / float(\"$sg\"):.2f}' if float(\"$sg\") > 0 else 'nan')")
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$name" "$loss" "$cc" "$startup" "$sg" "$em" "$ratio" "${runs[*]}" "$probe"
      done
    done
  done
done

[ "$TCP" = 0 ] && { echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"; exit 0; }
echo
echo "kernel TCP (iperf3 -C, ${DUR} s, ${RUNS} runs) over the same emulated links"
echo
echo "| link | loss | cc | Mbit/s (median) | runs |"
echo "|---|---:|---|---:|---|"
avail=$(cat /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null || echo "reno cubic")
for link in $LINKS; do
  name=$( [ "$link" = issue35 ] && echo issue35 || basename "$link")
  for loss in $LOSSES; do
    for cc in reno cubic bbr; do
      case " $avail " in *" $cc "*) ;; *) modprobe "tcp_$cc" 2>/dev/null || { echo "| $name | $loss | $cc | (not in this kernel) | |"; continue; } ;; esac
      runs=()
      for seed in $(seq "$RUNS"); do
        scenario "$link" "$loss" cubic slow-start "$TMP/s.toml" "$seed"
        unshare -n sh -c "
          ip link set lo up
          iperf3 -s -D -1 >/dev/null; sleep 0.3
          \"\$PEREGRINE\" emu --link $TMP/s.toml:links.0 -- \
            sh -c 'iperf3 -c \$PEREGRINE_EMU_HOST -C $cc -t $DUR -f m'" > "$TMP/iperf.txt" 2>&1 || true
        g=$(sed -n 's/.* \([0-9.]*\) Mbits\/sec .*receiver/\1/p' "$TMP/iperf.txt")
        runs+=("${g:-nan}")
      done
      printf "| %s | %s | %s | %s | %s |\n" "$name" "$loss" "$cc" "$(median "${runs[@]}")" "${runs[*]}"
    done
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
