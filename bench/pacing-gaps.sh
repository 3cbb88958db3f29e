#!/usr/bin/env bash
# Pacing finer than a millisecond (issue 35, docs/validation.md): the gaps
# between the datagrams a paced sender's *pacer* released, each against
# the controller's pacing rate in effect, as `peregrine emu --log` sees
# them arrive at the uplink (before the bottleneck), and the sender's CPU.
#
# For each binary and each rate R (20, 100, 500 Mbit/s): BBR (`perf client
# --cc bbr`, a paced controller) for DUR seconds through `peregrine emu
# --uplink R --downlink R --delay 10ms --queue bdp=1 --log`, the client
# writing a qlog (`perf --qlog`). The method:
#
# * the qlog lists every datagram the client sent, in order (time,
#   `raw.length`, frames), every datagram it received, and the pacing rate
#   the controller reported (`recovery:metrics_updated`, `pacing_rate`);
# * the emulator's log lists every IP packet arriving at the uplink, in
#   the same order: the two are aligned by size;
# * a gap counts as **paced** when both datagrams carried data and the
#   driver turn that sent the second one (the sends of one turn share a
#   qlog time) did not follow a receive — so no ACK released it: a
#   cwnd-limited sender's ACK-clocked sends are not the pacer's doing,
#   while two datagrams a *timer* turn released together are (a pair the
#   pacer let out) — after the first second;
# * each paced gap is compared with the gap the pacer should leave: the
#   first datagram's bytes at the pacing rate in effect when it left.
#
# Columns: goodput; paced gaps (and their share of all data gaps); the
# median of gap / expected; the share of paced gaps within ±10 % of the
# expected gap at the emulator (the issue's measure) and at the sender
# (qlog send times: the driver's own timing, without the emulator's read
# latency); pairs (gaps under a quarter of the expected one); the median
# pacing rate; and the client's CPU (user + system seconds from
# /usr/bin/time over the run's duration, qlog writing included in both
# binaries). Runs are interleaved (binary 1 rate 1, binary 2 rate 1, …),
# RUNS rounds. SHOW=N prints the first N paced gaps at the emulator (µs).
#
# Usage: bench/pacing-gaps.sh [BIN...]   (default target/release/peregrine)
# env RATES (default "20 100 500"), DUR (default 5), RUNS (default 1), SHOW.
# Needs root (network namespaces, TUN), python3.
set -euo pipefail
cd "$(dirname "$0")/.."
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=(target/release/peregrine)
RATES=${RATES:-"20 100 500"}
DUR=${DUR:-5}
RUNS=${RUNS:-1}
SHOW=${SHOW:-0}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs; ${DUR} s per run; $(date -u +%FT%TZ)"
echo
echo "| binary | Mbit/s | goodput Mbit/s | paced gaps (share) | median gap / expected | within ±10 % at emu | within ±10 % at send | pairs | median pacing rate Mbit/s | client CPU % |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for _ in $(seq "$RUNS"); do
  for rate in $RATES; do
    for bin in "${bins[@]}"; do
      bin=$(realpath "$bin")
      rm -rf "$TMP/qlog" "$TMP/emu.log" "$TMP/time.txt"
      mkdir -p "$TMP/qlog"
      PEREGRINE=$bin unshare -n sh -c "
        ip link set lo up
        \"\$PEREGRINE\" perf server --listen 0.0.0.0:4433 --insecure --once 2>/dev/null &
        sleep 0.3
        \"\$PEREGRINE\" emu --uplink ${rate}Mbps --downlink ${rate}Mbps --delay 10ms --queue bdp=1 --log $TMP/emu.log -- \
          sh -c '/usr/bin/time -f \"%U %S\" -o $TMP/time.txt \"\$PEREGRINE\" perf client --connect \$PEREGRINE_EMU_HOST:4433 --insecure --cc bbr --duration ${DUR}s --qlog $TMP/qlog --json'
        wait" > "$TMP/perf.json" 2>/dev/null || true
      python3 - "$TMP/emu.log" "$TMP/qlog" "$TMP/perf.json" "$TMP/time.txt" "$rate" "$DUR" "$(basename "$bin")" "$SHOW" <<'EOF'
import glob, json, statistics, sys
log, qdir, perf, timef, rate, dur, name, show = sys.argv[1:]
rate, dur, show = float(rate) * 1e6, float(dur), int(show)
nan = float("nan")
# The client's datagrams, in order: (send time ns, bytes, carries data,
# sent by a turn that followed a receive, pacing rate bit/s).
sent, rx_since, pacing = [], False, None
for f in glob.glob(qdir + "/*client*.sqlog"):
    for rec in open(f, encoding="utf-8").read().split("\x1e"):
        rec = rec.strip()
        if not rec:
            continue
        e = json.loads(rec)
        n, d = e.get("name"), e.get("data", {})
        if n == "recovery:metrics_updated" and d.get("pacing_rate"):
            pacing = d["pacing_rate"]
        elif n == "transport:packet_received":
            rx_since = True
        elif n == "transport:packet_sent":
            # One driver turn's sends share a time: a turn that follows
            # a receive was (or may have been) released by an ACK, every
            # datagram of it.
            t = e["time"] * 1e6
            if not sent or t != sent[-1][0]:
                acked, rx_since = rx_since, False
            else:
                acked = sent[-1][3] or rx_since
            data = any(fr.get("frame_type") == "stream" for fr in d.get("frames", []))
            sent.append((t, d["raw"]["length"], data, acked, pacing))
# The emulator's uplink arrivals, aligned with the sends by size: an IP
# packet is the qlog's `raw.length` plus a constant (the headers the
# trace does not count), found as the difference of the commonest sizes.
arr = [(int(l.split()[1]), int(l.split()[3])) for l in open(log)
       if l.startswith("u ") and " + " in l]
mode = lambda xs: max(set(xs), key=xs.count) if xs else 0
extra = mode([b for _, b in arr if b >= 1000]) - mode([s[1] for s in sent if s[1] >= 1000])
at, j = [None] * len(sent), 0
for i, s in enumerate(sent):
    k = j
    while k < len(arr) and k < j + 8 and arr[k][1] != s[1] + extra:
        k += 1
    if k < len(arr) and arr[k][1] == s[1] + extra:
        at[i], j = arr[k][0], k + 1
ratios_emu, ratios_send, data_gaps, seq = [], [], 0, []
for i in range(1, len(sent)):
    a, b = sent[i - 1], sent[i]
    if not (a[2] and b[2]) or b[0] < 1e9:
        continue
    data_gaps += 1
    if b[3] or not a[4] or at[i] is None or at[i - 1] is None:
        continue
    expected = a[1] * 8 / a[4] * 1e9
    ratios_emu.append((at[i] - at[i - 1]) / expected)
    ratios_send.append((b[0] - a[0]) / expected)
    if len(seq) < show:
        seq.append(f"{(at[i] - at[i - 1]) / 1e3:.0f}/{expected / 1e3:.0f}")
rates = [s[4] for s in sent if s[4] and s[0] >= 1e9]
try:
    goodput = json.load(open(perf))["throughput_bps"] / 1e6
except Exception:
    goodput = nan
try:
    u, s = map(float, open(timef).read().split()[-2:])
    cpu = (u + s) / dur * 100
except Exception:
    cpu = nan
share = lambda xs, f: sum(map(f, xs)) / len(xs) * 100 if xs else nan
within = lambda r: abs(r - 1) <= 0.1
n = len(ratios_emu)
med = statistics.median(ratios_emu) if n else nan
print(f"| {name} | {rate / 1e6:.0f} | {goodput:.1f} | {n} ({share([1] * n + [0] * (data_gaps - n), bool):.0f} %) "
      f"| {med:.2f} | {share(ratios_emu, within):.0f} % | {share(ratios_send, within):.0f} % "
      f"| {share(ratios_emu, lambda r: r < 0.25):.0f} % "
      f"| {statistics.median(rates) / 1e6 if rates else nan:.1f} | {cpu:.0f} |")
if seq:
    print("  paced gaps at the emulator / expected, µs: " + " ".join(seq))
EOF
    done
  done
done
echo
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
