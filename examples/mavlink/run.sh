#!/bin/sh
# MAVLink through `peregrine tunnel` beside a TCP bulk transfer, against the
# same two programs without the tunnel (plain UDP beside plain TCP), over a
# `peregrine emu` link of 1 Mbit/s each way, 20 ms one-way delay (40 ms RTT)
# and a 1-BDP drop-tail queue. docs/tunnel.md explains the set-up and the
# figures.
#
#   sh examples/mavlink/run.sh [SECONDS]      (default 12 s of commands per case)
#
# Needs root (a private network namespace, TUN), iperf3, and a Python with
# pymavlink: PYTHON=/path/to/venv/bin/python (default python3), PEREGRINE=
# the binary (default: `peregrine` on PATH). Prints one line per case:
#   result mode=baseline|tunnel sent=N acked=N lost=N p50_ms=X p99_ms=X goodput_mbps=X
# Everything runs in a network namespace of its own (`unshare -n`): no
# traffic touches the machine's own interfaces.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
: "${PEREGRINE:=peregrine}"
: "${PYTHON:=python3}"
T=${1:-12}
if [ "${PG_MAVLINK_INSIDE:-}" != 1 ]; then
  exec env PG_MAVLINK_INSIDE=1 PEREGRINE="$PEREGRINE" PYTHON="$PYTHON" unshare -n sh "$0" "$T"
fi
OUT=$(mktemp -d /tmp/pg-mavlink.XXXXXX)
# Real-time scheduling for the programs of both cases alike where allowed
# (root): on a busy machine a normal process's wake-up can wait several
# milliseconds behind others (the emulator's own threads already are).
RT=""
if chrt -f 5 true 2>/dev/null; then RT="chrt -f 5"; fi
: "${TUNNEL_OPTS:=}"   # extra client options, e.g. --queue-guard 5ms
: "${QUEUE:=bdp=1}"      # the emulator's --queue (bdp=4: a deeper buffer)
export OUT HERE T PEREGRINE PYTHON RT TUNNEL_OPTS
ip link set lo up
# The vehicle side: this (outer) namespace, the emulator's host side.
$RT "$PYTHON" "$HERE/responder.py" --listen 0.0.0.0:14550 2>"$OUT/responder.log" &
RESP=$!
iperf3 -s -p 5201 >"$OUT/iperf-server.log" 2>&1 &
IPS=$!
$RT "$PEREGRINE" tunnel server --listen 0.0.0.0:4433 --allow 127.0.0.1:14550,127.0.0.1:5201 \
  --interval 0 --json >"$OUT/server.json" 2>"$OUT/server.log" &
TS=$!
sleep 2
# The ground station side, behind the emulated link.
"$PEREGRINE" emu --uplink 1Mbps --downlink 1Mbps --delay 20ms --queue "$QUEUE" -- sh -c '
  set -eu
  H=$PEREGRINE_EMU_HOST
  # Baseline: plain UDP (MAVLink) beside plain TCP (iperf3).
  iperf3 -c "$H" -p 5201 -t $((T + 3)) -J >"$OUT/base-iperf.json" &
  ip=$!
  sleep 3
  $RT "$PYTHON" "$HERE/commander.py" --connect "$H:14550" --duration "$T" >"$OUT/base-cmd.txt" || true
  wait $ip || true
  # The same two programs through the tunnel.
  $RT "$PEREGRINE" tunnel client --connect "$H:4433" $TUNNEL_OPTS \
    -L udp:14550:127.0.0.1:14550 -L tcp:5201:127.0.0.1:5201 \
    --interval 0 --json >"$OUT/client.json" 2>"$OUT/client.log" &
  tc=$!
  sleep 2
  iperf3 -c 127.0.0.1 -p 5201 -t $((T + 3)) -J >"$OUT/tunnel-iperf.json" &
  ip=$!
  sleep 3
  $RT "$PYTHON" "$HERE/commander.py" --connect 127.0.0.1:14550 --duration "$T" >"$OUT/tunnel-cmd.txt" || true
  wait $ip || true
  kill -TERM $tc
  wait $tc || true
' || echo "emu failed: $?" >&2
kill $RESP $IPS 2>/dev/null || true
kill -TERM $TS 2>/dev/null || true
wait $TS 2>/dev/null || true
for mode in base tunnel; do
  "$PYTHON" - "$OUT/$mode-iperf.json" "$OUT/$mode-cmd.txt" "$mode" <<'PY'
import json, sys
iperf, cmd, mode = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    j = json.load(open(iperf))
    gp = j["end"]["sum_received"]["bits_per_second"] / 1e6
except Exception as e:
    gp = float("nan")
line = open(cmd).read().strip() if cmd else ""
fields = line.split(" ", 1)[1] if line.startswith("commander") else "sent=0 acked=0 lost=0 p50_ms=nan p99_ms=nan max_ms=nan heartbeats=0"
name = "baseline" if mode == "base" else "tunnel"
print(f"result mode={name} {fields} goodput_mbps={gp:.3f}")
PY
done
echo "logs: $OUT"
tail -n 1 "$OUT/client.json" | "$PYTHON" -c '
import json, sys
t = json.loads(sys.stdin.read())
for f in t["flows"]:
    print("flow proto={proto} target={target} class={class} up_bytes={up_bytes} down_bytes={down_bytes} dropped={dropped} abandoned={abandoned} state={state!r}".format(**f))
' 2>/dev/null || true
