#!/bin/bash
# Bytes on the wire in both directions (docs/security.md "On the wire",
# docs/tunnel.md "What it costs on the wire"): counts every datagram of one
# loopback run with tshark, forward (client → server) and reverse.
#
#   bench/wire-bytes.sh perf [perf client flags…]   e.g. -t 5 -b 100Mbps --key-update-bytes 1000000
#   bench/wire-bytes.sh tunnel [BYTES]              a TCP transfer through `peregrine tunnel` (default 50000000)
#
# Needs root (capture on lo), tshark and a release build
# (cargo build --release -p peregrine-cli, or PEREGRINE=path).
set -u
P=${PEREGRINE:-$(dirname "$0")/../target/release/peregrine}
DIR=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$DIR"' EXIT
PORT=${PORT:-4700}
command -v tshark >/dev/null || { echo "needs tshark" >&2; exit 2; }

capture_start() {
  tshark -q -i lo -f "udp port $PORT" -w "$DIR/cap.pcapng" >/dev/null 2>&1 &
  TP=$!
  sleep 2 # tshark needs a moment before it captures
}

capture_count() { # label payload_bytes
  sleep 1; kill $TP; wait $TP 2>/dev/null
  tshark -r "$DIR/cap.pcapng" -T fields -e udp.srcport -e udp.length 2>/dev/null |
    awk -v port="$PORT" -v label="$1" -v payload="$2" '
      { n = $2 - 8; if ($1 == port) { rd++; rb += n } else { fd++; fb += n } }
      END {
        printf "%s: payload %d B; forward %d datagrams %d B (%.4f over the payload); reverse %d datagrams %d B; reverse/forward bytes %.4f\n",
          label, payload, fd, fb, (payload ? fb / payload - 1 : 0), rd, rb, (fb ? rb / fb : 0)
      }'
}

case "${1:-}" in
perf)
  shift
  capture_start
  "$P" perf server --listen 127.0.0.1:$PORT --once >/dev/null 2>&1 &
  sleep 0.5
  "$P" perf client -c 127.0.0.1 -p $PORT -i 0 --json "$@" >"$DIR/r.json"
  wait %2 2>/dev/null
  bytes=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bytes"])' "$DIR/r.json")
  capture_count "perf $*" "$bytes"
  ;;
tunnel)
  N=${2:-50000000}
  SINK=$((PORT + 1000)); LOCAL=$((PORT + 1001))
  python3 - "$SINK" "$DIR/sink" <<'PY' &
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)
c, _ = s.accept(); n = 0
while True:
    d = c.recv(1 << 16)
    if not d: break
    n += len(d)
open(sys.argv[2], "w").write(str(n))
PY
  SINKPID=$!
  capture_start
  "$P" tunnel server --listen 127.0.0.1:$PORT --allow 127.0.0.1:$SINK --interval 0 >/dev/null 2>&1 &
  TS=$!
  sleep 0.5
  "$P" tunnel client --connect 127.0.0.1:$PORT -L tcp:$LOCAL:127.0.0.1:$SINK --interval 0 >/dev/null 2>&1 &
  TC=$!
  sleep 1.5
  start=$(date +%s.%N)
  python3 - "$LOCAL" "$N" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
left = int(sys.argv[2]); buf = bytes(1 << 16)
while left > 0:
    k = min(left, len(buf)); s.sendall(buf[:k]); left -= k
s.shutdown(socket.SHUT_WR); s.recv(1)
PY
  wait $SINKPID; end=$(date +%s.%N)
  kill -INT $TC $TS 2>/dev/null; wait $TC $TS 2>/dev/null
  echo "tunnel: sink got $(cat "$DIR/sink") of $N B in $(echo "$end - $start" | bc) s"
  capture_count "tunnel tcp" "$N"
  ;;
*)
  sed -n '2,12p' "$0"; exit 2 ;;
esac
