#!/usr/bin/env bash
# Where an echo's time goes on the wire: seed 003's "network time" across the
# same 1 Gbit/s veth pair as `peregrine reproduce sltp --ethernet`, captured at
# both ends' interfaces (docs/performance.md, "Where a 64 KiB echo's time goes
# on the wire").
#
# Two network namespaces (pgew-PID-s, pgew-PID-c) joined by a veth pair
# (MTU 1,500, `tc tbf rate 1Gbit burst 6000 latency 10ms` on both ends, as
# the reproduction sets them), `tshark -i` inside both namespaces, then
# N echoes of SIZE bytes for each contender, one after the other:
#   default  peregrine perf client --echo-size SIZE (path MTU discovery on)
#   pinned   the same with --pmtud off --max-datagram 1472 (the path's MTU)
#   tcp      kernel TCP: a blocking echo server and client (python3,
#            TCP_NODELAY; 4-byte length, then the buffer, returned whole)
# and per echo, medians over the N echoes: datagrams/segments and IP bytes
# each way, the client's first packet out to the server's last in, the
# server's turnaround (last request packet in to first echo packet out),
# the return, the echo at the client's interface, and the echo as the
# application measured it. The namespaces are deleted on exit.
#
# Usage: sudo bench/echo-wire.sh      (root, iproute2, tc with tbf, tshark, python3, jq)
#   env PEREGRINE=path (default target/release/peregrine), SIZE=65536, N=50, OUT=/tmp/echo-wire
set -euo pipefail
cd "$(dirname "$0")/.."
PEREGRINE=${PEREGRINE:-target/release/peregrine}
PEREGRINE=$(realpath "$PEREGRINE")
SIZE=${SIZE:-65536}; N=${N:-50}; OUT=${OUT:-/tmp/echo-wire}
for t in ip tc tshark python3 jq; do
  command -v $t >/dev/null || { echo "echo-wire: needs $t" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "echo-wire: needs root (network namespaces)" >&2; exit 2; }
[ -x "$PEREGRINE" ] || { echo "echo-wire: no $PEREGRINE (cargo build --release -p peregrine-cli)" >&2; exit 2; }
S=pgew-$$-s; C=pgew-$$-c
cleanup() { for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done; ip netns del $S 2>/dev/null || true; ip netns del $C 2>/dev/null || true; }
trap cleanup EXIT
ip netns add $S; ip netns add $C
ip link add pgew0 netns $S type veth peer name pgew0 netns $C
for ns in $S $C; do
  ip -n $ns link set lo up
  ip -n $ns link set pgew0 mtu 1500 up
  ip netns exec $ns tc qdisc add dev pgew0 root tbf rate 1000000000bit burst 6000 latency 10ms
done
ip -n $S addr add 10.254.0.1/30 dev pgew0
ip -n $C addr add 10.254.0.2/30 dev pgew0
rm -rf "$OUT"; mkdir -p "$OUT"
cat >"$OUT/tcpecho.py" <<'PY'
import socket, struct, sys, time
def recvall(s, n):
    b = bytearray()
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError
        b += c
    return bytes(b)
if sys.argv[1] == "server":
    l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("10.254.0.1", 6001)); l.listen(1)
    s, _ = l.accept(); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        while True:
            n = struct.unpack("!I", recvall(s, 4))[0]; s.sendall(recvall(s, n))
    except EOFError:
        pass
else:
    size, n = int(sys.argv[2]), int(sys.argv[3])
    s = socket.create_connection(("10.254.0.1", 6001)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = bytes(size); out = []
    for _ in range(n):
        t = time.perf_counter(); s.sendall(struct.pack("!I", size) + buf); recvall(s, size)
        out.append((time.perf_counter() - t) * 1e3)
    print(" ".join("%.4f" % x for x in out))
PY
run() { # tag, extra perf flags...
  local tag=$1; shift
  mkdir -p "$OUT/$tag"
  local caps=()
  for ns in $S $C; do
    ip netns exec $ns tshark -q -i pgew0 -s 96 -w "$OUT/$tag/$ns.pcapng" 2>/dev/null & caps+=($!)
  done
  # tshark writes its file header once it captures; a cold start can take seconds.
  for _ in $(seq 100); do
    [ -s "$OUT/$tag/$S.pcapng" ] && [ -s "$OUT/$tag/$C.pcapng" ] && break
    sleep 0.1
  done
  sleep 0.5
  if [ "$tag" = tcp ]; then
    ip netns exec $S python3 "$OUT/tcpecho.py" server & local srv=$!; sleep 0.3
    ip netns exec $C python3 "$OUT/tcpecho.py" client "$SIZE" "$N" >"$OUT/$tag/times.txt"
  else
    ip netns exec $S "$PEREGRINE" perf server --listen 10.254.0.1:5201 --once "$@" >/dev/null 2>&1 & local srv=$!; sleep 0.3
    ip netns exec $C "$PEREGRINE" perf client --connect 10.254.0.1:5201 --echo-size "$SIZE" --echo-count "$N" --json "$@" 2>/dev/null \
      | jq -r '.echo.times_ms | map(tostring) | join(" ")' >"$OUT/$tag/times.txt"
  fi
  wait "$srv" 2>/dev/null || true
  sleep 1
  kill "${caps[@]}" 2>/dev/null || true; wait "${caps[@]}" 2>/dev/null || true
  for ns in $S $C; do
    tshark -r "$OUT/$tag/$ns.pcapng" -T fields -e frame.time_epoch -e ip.src -e ip.len 2>/dev/null >"$OUT/$tag/${ns##*-}.tsv"
  done
}
echo "echo-wire: $N echoes of $SIZE bytes, load average $(cut -d' ' -f1-3 /proc/loadavg)"
run default
run pinned --pmtud off --max-datagram 1472
run tcp
python3 - "$OUT" <<'PY'
import statistics, sys
out = sys.argv[1]
cli, srv = "10.254.0.2", "10.254.0.1"
def load(path):
    rows = []
    for line in open(path):
        p = line.rstrip("\n").split("\t")
        if len(p) == 3 and p[2]:
            rows.append((float(p[0]), p[1], int(p[2])))
    return rows
def echoes(rows):
    # Large packets only (data); a request run starts at the first client packet after a response.
    ev = sorted((t, "q" if s == cli else "r", n) for t, s, n in rows if n > 1000)
    out, cur = [], None
    for t, k, n in ev:
        if k == "q" and (cur is None or cur["r"]):
            cur = {"q": [], "r": [], "qb": 0}; out.append(cur)
        if cur is not None:
            cur[k].append(t)
            if k == "q": cur["qb"] += n
    return [e for e in out if e["q"] and e["r"]]
names = ["datagrams/segments each way", "IP bytes each way", "client first out -> server last in (ms)",
         "server turnaround (ms)", "server first out -> client last in (ms)", "echo at the client interface (ms)",
         "echo in the application, median (ms)", "echo in the application, min (ms)"]
cols = {}
for tag in ("default", "pinned", "tcp"):
    s, c = echoes(load(f"{out}/{tag}/s.tsv")), echoes(load(f"{out}/{tag}/c.tsv"))
    rows = [(len(e["q"]), e["qb"], (e["q"][-1] - f["q"][0]) * 1e3, (e["r"][0] - e["q"][-1]) * 1e3,
             (f["r"][-1] - e["r"][0]) * 1e3, (f["r"][-1] - f["q"][0]) * 1e3) for e, f in zip(s, c)]
    app = [float(x) for x in open(f"{out}/{tag}/times.txt").read().split()]
    med = [statistics.median(r[i] for r in rows) for i in range(6)] if rows else [float("nan")] * 6
    cols[tag] = med + [statistics.median(app), min(app)]
print("| per echo (median) | peregrine default | peregrine 1,472 B pinned | kernel TCP |")
print("|---|---:|---:|---:|")
for i, n in enumerate(names):
    fmt = "{:,.0f}" if i < 2 else "{:.3f}"
    print(f"| {n} | " + " | ".join(fmt.format(cols[t][i]) for t in ("default", "pinned", "tcp")) + " |")
PY
