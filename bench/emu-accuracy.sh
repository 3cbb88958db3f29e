#!/usr/bin/env bash
# The accuracy figures of `peregrine emu` (docs/emulator.md §Accuracy):
#   1. kernel TCP (iperf3 -R) over a constant 12 Mbit/s, 20 ms link;
#   2. added one-way delay of a 20 ms link, UDP echo at 100 packets/s;
#   3. a Mahimahi trace's delivered packets over 60 s under a saturating
#      sender, against the trace's opportunities over the same interval;
#   4. the emulator's own ceiling (no rate limit), iperf3 both ways.
# Needs root, iperf3, iproute2, python3. Every run is inside namespaces
# made here (unshare -n): nothing touches the machine's own namespace.
# Takes about 3 minutes. TRACE, SECS, BLAST_MBPS, QUEUE_PACKETS change run 3; SECTIONS=3
# runs only it. Prints the load average: other work on the
# machine delays the probes (not the emulator, which runs SCHED_FIFO).
set -euo pipefail
cd "$(dirname "$0")/.."
TRACE=${TRACE:-../shared/traces/mahimahi/ATT-LTE-driving.down}
SECS=${SECS:-60}
ECHO_SECS=${ECHO_SECS:-20}
BLAST_MBPS=${BLAST_MBPS:-25}
QUEUE_PACKETS=${QUEUE_PACKETS:-1000}
SECTIONS=${SECTIONS:-1234}   # which of the four to run
export CARGO_PROFILE_DEV_DEBUG=0
cargo build --release -q -p peregrine-cli
export PEREGRINE=$PWD/target/release/peregrine
# The small probe program is the emulator test's executable.
export PROBE=$(cargo test -p peregrine-cli --test emu --no-run 2>&1 |
  sed -n 's/.*Executable tests\/emu.rs (\(.*\))/\1/p')
[ -x "$PROBE" ] || { echo "cannot find the probe (tests/emu.rs executable)"; exit 1; }
# Run 3's sender and receiver run real-time where permitted: at the
# fast traces' packet rates a normal-priority receiver on a busy machine
# overflows its socket buffer.
RT=$(chrt -f 5 true 2>/dev/null && echo "chrt -f 5" || true)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"

if [[ $SECTIONS == *1* ]]; then
echo "== 1. iperf3 -R over 12 Mbit/s both ways, 20 ms, unbounded queue, 20 s"
unshare -n sh -c '
  iperf3 -s -D -1 >/dev/null; sleep 0.3
  "$PEREGRINE" emu --downlink 12Mbps --uplink 12Mbps --delay 20ms -- \
    sh -c "iperf3 -c \$PEREGRINE_EMU_HOST -R -t 20 -f m"' > "$TMP/tcp.txt"
grep receiver "$TMP/tcp.txt"
python3 - "$TMP/tcp.txt" <<'EOF'
import re, sys
line = [l for l in open(sys.argv[1]) if "receiver" in l][0]
mbps = float(re.search(r"([\d.]+) Mbits/sec", line).group(1))
after = 12 * 1448 / 1500  # 1500-byte packets, 52 bytes of IP + TCP (+ timestamps) headers
print(f"tcp goodput {mbps} Mbit/s = {100 * mbps / after:.1f} % of {after:.2f} Mbit/s after headers "
      f"({100 * mbps / 12:.1f} % of 12)")
EOF
fi

if [[ $SECTIONS == *2* ]]; then
echo "== 2. UDP echo, 100 packets/s for ${ECHO_SECS} s: no delay, then 20 ms each way (12 Mbit/s)"
n=$((ECHO_SECS * 100))
for prio in "" "chrt -f 5"; do
  for link in "" "--downlink 12Mbps --uplink 12Mbps --delay 20ms"; do
    unshare -n sh -c "
      $prio \"\$PROBE\" probe udp-echo 6000 & e=\$!
      \"\$PEREGRINE\" emu $link -- sh -c '$prio \"\$PROBE\" probe udp-ping \$PEREGRINE_EMU_HOST:6000 $n 10 100'
      kill \$e" | sed "s/^/${prio:+[probes $prio] }${link:-[no delay]} /"
  done
done | tee "$TMP/echo.txt"
python3 - "$TMP/echo.txt" <<'EOF'
import re, sys
rows = [l for l in open(sys.argv[1])]
def get(l, k): return float(re.search(k + r"=([\d.]+)", l).group(1))
for tag in ("", "[probes chrt -f 5] "):
    base = [l for l in rows if l.startswith(tag + "[no delay]")][0]
    link = [l for l in rows if l.startswith(tag + "--downlink")][0]
    b = get(base, "mean_ms")
    # One-way added delay: half the RTT above the no-delay baseline; the
    # 128-byte packets also take 2 x 85 us to serialise at 12 Mbit/s.
    mean = (get(link, "mean_ms") - b) / 2
    p99 = (get(link, "p99_ms") - b) / 2
    print(f"{tag or '[probes at normal priority] '}added one-way delay: mean {mean:.3f} ms "
          f"({mean - 20:+.3f}), p99 {p99:.3f} ms ({p99 - 20:+.3f}); asked 20 ms + 0.085 ms serialisation")
EOF
fi

if [[ $SECTIONS == *3* ]]; then
echo "== 3. trace $TRACE as uplink, queue $QUEUE_PACKETS packets, UDP at ${BLAST_MBPS} Mbit/s for ${SECS} s"
unshare -n sh -c "
  $RT \"\$PROBE\" probe udp-count 6001 $SECS > $TMP/count.txt &
  \"\$PEREGRINE\" emu --uplink $TRACE --queue packets=$QUEUE_PACKETS --log $TMP/trace.log -- \
    sh -c '$RT \"\$PROBE\" probe udp-blast \$PEREGRINE_EMU_HOST:6001 $BLAST_MBPS $((SECS + 2)) 1472 >/dev/null'
  wait"
cat "$TMP/count.txt"
python3 - "$TMP/count.txt" "$TMP/trace.log" "$TRACE" <<'EOF'
import re, sys, bisect
count = open(sys.argv[1]).read()
start = int(re.search(r"start_monotonic_ns (\d+)", open(sys.argv[2]).read()).group(1))
ms = [int(l) for l in open(sys.argv[3]) if l.strip()]
period = ms[-1]
def opps_before(t_ns):  # opportunities strictly before t (looping trace)
    t_ms = -(-t_ns // 1_000_000)  # opportunities are whole ms: first at or after ceil(t)
    cyc, within = divmod(t_ms, period)
    return cyc * len(ms) + bisect.bisect_left(ms, within)
g = lambda k: int(re.search(k + r"=(\d+)", count).group(1))
first, last, packets = g("first_mono_ns") - start, g("last_mono_ns") - start, g("packets")
# Packets after the first one, against the opportunities in (first, last].
expected = opps_before(last + 1) - opps_before(first + 1)
got = packets - 1
print(f"trace: {got} packets of 1500 bytes delivered over {(last - first) / 1e9:.1f} s, "
      f"the trace has {expected} opportunities there: {100 * (got - expected) / expected:+.3f} %")
EOF
fi

if [[ $SECTIONS == *4* ]]; then
echo "== 4. ceiling: no rate limit, no delay, iperf3 10 s each way"
for dir in "" "-R"; do
  unshare -n sh -c "
    iperf3 -s -D -1 >/dev/null; sleep 0.3
    \"\$PEREGRINE\" emu -v -- sh -c 'iperf3 -c \$PEREGRINE_EMU_HOST $dir -t 10 -f m'" 2>&1 |
    grep -E "receiver|late" | sed "s/^/[iperf3 $dir] /"
done
fi

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
