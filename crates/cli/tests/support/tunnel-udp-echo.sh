# tunnel_cli.rs, udp_echo_through_emu_with_loss_and_reordering; run in a
# fresh network namespace (`unshare -n sh THIS`), PEREGRINE = the binary.
# Outer side: a UDP echo (127.0.0.1:7000), the tunnel server
# (127.0.0.1:4433) and a relay on :4434 that reorders the tunnel's own
# datagrams both ways (every third held back behind the next). Inner side,
# behind `peregrine emu` (10 ms each way, 5 % loss each way): the tunnel
# client with a reliable and an unreliable forward to the echo, and a
# pinger on each. Prints `reliable …`, `unreliable …` and `relay …` lines.
set -eu
ip link set lo up
D=$(mktemp -d /tmp/pg-tunnel-echo.XXXXXX)
export D
python3 - <<'PY' &
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 7000))
while True:
    b, a = s.recvfrom(65536)
    s.sendto(b, a)
PY
ECHO=$!
"$PEREGRINE" tunnel server --listen 127.0.0.1:4433 --insecure --interval 0 >"$D/server.out" 2>"$D/server.err" &
SRV=$!
python3 - <<'PY' &
import os, select, signal, socket, sys
relay = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
relay.bind(("0.0.0.0", 4434))
up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
up.connect(("127.0.0.1", 4433))
client = None
held = {relay: None, up: None}   # a datagram held back, per receiving socket
count = {relay: 0, up: 0}
reordered = 0
def done(*_):
    open(os.path.join(os.environ["D"], "relay.txt"), "w").write(f"relay reordered={reordered}\n")
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
def out(sock, b):
    if sock is relay:
        up.send(b)
    elif client is not None:
        relay.sendto(b, client)
while True:
    r, _, _ = select.select([relay, up], [], [], 0.02)
    if not r:
        for s in (relay, up):   # nothing followed within 20 ms: let it go
            if held[s] is not None:
                out(s, held[s]); held[s] = None
        continue
    for s in r:
        b, a = s.recvfrom(65536)
        if s is relay:
            client = a
        count[s] += 1
        if held[s] is not None:
            out(s, b); out(s, held[s]); held[s] = None
            reordered += 1
        elif count[s] % 3 == 0:
            held[s] = b
        else:
            out(s, b)
PY
RELAY=$!
sleep 1
"$PEREGRINE" emu --delay 10ms --loss 0.05 -- sh -c '
  set -eu
  "$PEREGRINE" tunnel client --connect "$PEREGRINE_EMU_HOST:4434" --insecure --interval 0 \
    -L udp:7001:127.0.0.1:7000,reliability=reliable \
    -L udp:7002:127.0.0.1:7000,reliability=unreliable >"$D/client.out" 2>"$D/client.err" &
  C=$!
  sleep 2
  for m in reliable:7001 unreliable:7002; do
    python3 - "${m%%:*}" "${m##*:}" <<'"'"'PY'"'"'
import socket, sys, time
mode, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.005)
def payload(i):
    return i.to_bytes(4, "big") + bytes((i * 7 + k) % 256 for k in range(300))
back, corrupt, dup, late = set(), 0, 0, 0
last = -1
def take():
    global corrupt, dup, late, last
    try:
        b = s.recv(65536)
    except socket.timeout:
        return False
    i = int.from_bytes(b[:4], "big")
    if b != payload(i):
        corrupt += 1
    elif i in back:
        dup += 1
    else:
        back.add(i)
        if i < last:
            late += 1
        last = max(last, i)
    return True
for i in range(300):
    s.sendto(payload(i), ("127.0.0.1", port))
    end = time.monotonic() + 0.01
    while time.monotonic() < end:
        take()
end = time.monotonic() + 4
while time.monotonic() < end and len(back) < 300:
    take()
print(f"{mode} sent=300 back={len(back)} corrupt={corrupt} dup={dup} out_of_order={late}")
PY
  done
  kill -TERM $C; wait $C || true
'
kill -TERM $RELAY; wait $RELAY || true
kill $ECHO; kill -TERM $SRV; wait $SRV || true
cat "$D/relay.txt"
rm -rf "$D"
