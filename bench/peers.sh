#!/usr/bin/env bash
# Peregrine's peer benchmark (issue 12, item 4; documented in docs/performance.md).
#
# One run on loopback, contenders interleaved (run 1 of each, then run 2 of
# each, ...), so slow drift of a shared machine hits every contender alike:
#
#   1. bulk: one connection for DURATION seconds, as Gbit/s and CPU-seconds
#      per GB (user + system of client and server, from /usr/bin/time):
#        peregrine          peregrine perf server --once / perf client --json
#                           (encrypted, plus PEREGRINE_PERF_FLAGS)
#        peregrine-insecure the same with --insecure (SLTP's plain format),
#                           unless PEREGRINE_PERF_FLAGS already has it
#        tcp-cubic          iperf3 -C cubic
#        tcp-cubic-mss1448  iperf3 -C cubic -M 1448 (segments the size of a
#                           Peregrine/QUIC datagram)
#        quinn              bench/quinn-peer (quinn defaults, one stream)
#      medians over RUNS runs, and ratios. Datagrams are pinned to 1,452
#      bytes of UDP payload on both QUIC-like contenders: Peregrine with
#      `--pmtud off --max-datagram 1452` (a binary without --pmtud has fixed
#      1,452-byte datagrams anyway), and quinn-peer's initial_mtu = min_mtu
#      = 1452 with MTU discovery off (quinn would otherwise start at 1,200
#      bytes). One more row, peregrine-maxdgram, runs Peregrine's default:
#      path MTU discovery up to the interface's MTU (loopback: 65,507-byte
#      datagrams);
#   2. idle: IDLE_CONNECTIONS (default 1,000) concurrent idle connections on
#      one server endpoint, opened one after another by one client and held
#      IDLE_HOLD seconds (default 10): the seconds the client took to open
#      them (open_s, until it reports them all open), the server's
#      resident-memory growth per connection (peak RSS while they are open,
#      VmHWM, minus RSS before) and the server's CPU use while they are held
#      (idle_cpu_cores: user + system time over wall time, from
#      /proc/PID/stat, for IDLE_HOLD - 1 seconds after they are all open):
#      quinn-peer idle, and Peregrine through `perf client
#      --idle-connections` or else bench/peregrine-idle;
#   3. latency: open loop, 1,000 messages/s of 200 bytes on a priority stream
#      while a bulk stream saturates, p50/p99 per scheduler
#      (peregrine perf --latency-trace with a generated trace), and the bulk
#      stream's goodput beside it (its bytes at the server over the run);
#      a bulk-alone row (the same client without the trace, run before the
#      first round and after every round, median) is the goodput reference.
#      LATENCY_RUNS rounds (default RUNS), each scheduler once per round
#      (interleaved, like the bulk runs): the table gives per scheduler the
#      median of the rounds' p50, p99, mean and bulk goodput, and the p99's
#      range — one 5-s run's p99 (its 50 slowest messages) moves between
#      runs by more than between schedulers.
#
# A contender whose tool is missing is skipped with a notice saying how to
# get it; the run goes on. Results: OUT/bulk.csv, idle.csv, latency.csv and
# OUT/summary.md (Markdown tables).
#
# Usage: bench/peers.sh [--runs N] [--duration SECS] [--out DIR] [--only LIST]
#   env PEREGRINE=path/to/peregrine (default target/release/peregrine, built if missing)
#   env QUINN_PEER=path/to/quinn-peer (default bench/quinn-peer/target/release/quinn-peer, built if missing)
#   env PEREGRINE_IDLE=path/to/peregrine-idle (default bench/peregrine-idle/..., built if missing;
#       used for the idle row when `peregrine perf client` has no --idle-connections)
#   env IDLE_CONNECTIONS=1000 (idle section: connections to open and hold)
#   env IDLE_HOLD=10 (idle section: seconds to hold them open; at least 2)
#   env BASE_PORT=47100 (ports BASE_PORT .. BASE_PORT+9 on 127.0.0.1)
#   env LATENCY_RUNS=N (latency section: rounds over the schedulers; default RUNS)
#   env SCHEDULERS="rr wfq abs adaptive edf aging" (latency section: the schedulers run)
#   env PEREGRINE_BASELINE=path/to/another/peregrine (optional): adds its bulk rows
#       (baseline, baseline-insecure) to the same interleaved run, for a before/after
#   env PEREGRINE_PERF_FLAGS="--insecure" (extra flags for both perf sides; empty by default:
#       Peregrine runs encrypted, like quinn; --insecure compares SLTP's plain format with TCP)
set -euo pipefail
# Word-split on purpose: a list of flags.
read -r -a PERF_FLAGS <<<"${PEREGRINE_PERF_FLAGS:-}"

ROOT=$(cd "$(dirname "$0")/.." && pwd)
INVOCATION="bench/peers.sh $*"
RUNS=5
DURATION=5
OUT="$ROOT/out/peers"
ONLY="bulk,idle,latency"
IDLE_CONNECTIONS=${IDLE_CONNECTIONS:-1000}
IDLE_HOLD=${IDLE_HOLD:-10}
SCHEDULERS=${SCHEDULERS:-"rr wfq abs adaptive edf aging"}
BASE_PORT=${BASE_PORT:-47100}

while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    -h|--help) sed -n '2,50p' "$0"; exit 0 ;;
    *) echo "peers.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

PEREGRINE=${PEREGRINE:-$ROOT/target/release/peregrine}
QUINN_PEER=${QUINN_PEER:-$ROOT/bench/quinn-peer/target/release/quinn-peer}
PEREGRINE_IDLE=${PEREGRINE_IDLE:-$ROOT/bench/peregrine-idle/target/release/peregrine-idle}
mkdir -p "$OUT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
note() { echo "peers.sh: $*" >&2; }

# ---- tools ----------------------------------------------------------------
for tool in jq bc /usr/bin/time; do
  command -v "$tool" >/dev/null || { note "$tool is required (apt-get install -y ${tool##*/})"; exit 1; }
done
HAVE_IPERF=1
if ! command -v iperf3 >/dev/null; then
  HAVE_IPERF=0
  note "iperf3 not found: the kernel-TCP rows are skipped (install with: apt-get install -y iperf3)"
fi
if [ ! -x "$PEREGRINE" ]; then
  note "building $PEREGRINE (cargo build --release -p peregrine-cli)"
  (cd "$ROOT" && cargo build --release -p peregrine-cli) || true
fi
HAVE_PEREGRINE=1
if ! "$PEREGRINE" perf --help >/dev/null 2>&1; then
  HAVE_PEREGRINE=0
  note "'$PEREGRINE perf' is not available: the Peregrine rows are skipped"
fi
if [ ! -x "$QUINN_PEER" ]; then
  note "building quinn-peer (cargo build --release in bench/quinn-peer)"
  (cd "$ROOT/bench/quinn-peer" && cargo build --release) || true
fi
HAVE_QUINN=1
[ -x "$QUINN_PEER" ] || { HAVE_QUINN=0; note "quinn-peer could not be built: the quinn rows are skipped"; }

CONTENDERS=()
[ $HAVE_PEREGRINE = 1 ] && CONTENDERS+=(peregrine)
# Both Peregrine formats in one interleaved run (issue 18's two checks).
if [ $HAVE_PEREGRINE = 1 ] && [[ " ${PERF_FLAGS[*]} " != *" --insecure "* ]]; then
  BULK_INSECURE=(peregrine-insecure)
else
  BULK_INSECURE=()
fi
# Like-for-like rows pin 1,452-byte datagrams; a binary with path MTU
# discovery also gets a row with its default (the largest datagram).
pin_flags() {
  if "$1" perf client --help 2>/dev/null | grep -q -- --pmtud; then echo "--pmtud off --max-datagram 1452"; fi
}
if [ $HAVE_PEREGRINE = 1 ] && [ -n "$(pin_flags "$PEREGRINE")" ]; then
  BULK_INSECURE+=(peregrine-maxdgram)
fi
# A second Peregrine binary, interleaved with the first (before/after).
if [ -n "${PEREGRINE_BASELINE:-}" ]; then
  if "$PEREGRINE_BASELINE" perf --help >/dev/null 2>&1; then
    BULK_INSECURE+=(baseline)
    [[ " ${PERF_FLAGS[*]} " != *" --insecure "* ]] && BULK_INSECURE+=(baseline-insecure)
  else
    note "PEREGRINE_BASELINE=$PEREGRINE_BASELINE has no 'perf': its rows are skipped"
  fi
fi
[ $HAVE_IPERF = 1 ] && CONTENDERS+=(tcp-cubic tcp-cubic-mss1448)
[ $HAVE_QUINN = 1 ] && CONTENDERS+=(quinn)

# Median of numbers on stdin, one per line.
median() {
  sort -g | awk '{a[NR]=$1} END { if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'
}
# user + system seconds from a /usr/bin/time -f "%U %S" file (last line).
cpu_of() { tail -n 1 "$1" | awk '{print $1 + $2}'; }
# Start a server in the background, timed; its pid in SERVER_PID.
start_server() {
  local tfile=$1; shift
  timeout $((DURATION + 60)) /usr/bin/time -f "%U %S" -o "$tfile" "$@" >"$TMP/server.out" 2>"$TMP/server.err" &
  SERVER_PID=$!
  sleep 0.5
}
stop_server() {
  # A --once server exits by itself after its client; give it a moment.
  for _ in $(seq 1 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
  kill "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
}

# ---- 1. bulk -----------------------------------------------------------------
bulk_once() {
  local run=$1 who=$2 port=$((BASE_PORT + 1)) client=() jqb jqs jqd flags=("${PERF_FLAGS[@]}") bin=$PEREGRINE
  case "$who" in
    peregrine|peregrine-insecure|peregrine-maxdgram|baseline|baseline-insecure)
      [[ "$who" == *-insecure ]] && flags+=(--insecure)
      [[ "$who" == baseline* ]] && bin=$PEREGRINE_BASELINE
      # Word-split on purpose: a list of flags (empty for old binaries).
      # shellcheck disable=SC2207
      [ "$who" != peregrine-maxdgram ] && flags+=($(pin_flags "$bin"))
      start_server "$TMP/s.time" "$bin" perf server --listen "127.0.0.1:$port" --once "${flags[@]}"
      client=("$bin" perf client --connect "127.0.0.1:$port" --duration "${DURATION}s" --json "${flags[@]}")
      jqb=.bytes; jqs=.throughput_bps; jqd=.duration_s ;;
    tcp-cubic|tcp-cubic-mss1448)
      start_server "$TMP/s.time" iperf3 -s -1 -p "$port"
      client=(iperf3 -c 127.0.0.1 -p "$port" -t "$DURATION" -C cubic -J)
      [ "$who" = tcp-cubic-mss1448 ] && client+=(-M 1448)
      jqb=.end.sum_received.bytes; jqs=.end.sum_received.bits_per_second; jqd=.end.sum_received.seconds ;;
    quinn)
      start_server "$TMP/s.time" "$QUINN_PEER" server --listen "127.0.0.1:$port" --once --cert-out "$TMP/cert.der"
      client=("$QUINN_PEER" client --connect "127.0.0.1:$port" --duration "$DURATION" --cert "$TMP/cert.der")
      jqb=.bytes; jqs=.throughput_bps; jqd=.duration_s ;;
  esac
  if ! timeout $((DURATION + 30)) /usr/bin/time -f "%U %S" -o "$TMP/c.time" "${client[@]}" >"$TMP/c.json" 2>"$TMP/c.err"; then
    note "bulk run $run of $who failed: $(tail -n 2 "$TMP/c.err" | tr '\n' ' ')"
    stop_server; return 0
  fi
  stop_server
  local bytes bps secs cpu
  bytes=$(jq -r "$jqb" "$TMP/c.json"); bps=$(jq -r "$jqs" "$TMP/c.json"); secs=$(jq -r "$jqd" "$TMP/c.json")
  cpu=$(awk -v a="$(cpu_of "$TMP/c.time")" -v b="$(cpu_of "$TMP/s.time")" 'BEGIN { print a + b }')
  awk -v r="$run" -v w="$who" -v by="$bytes" -v bps="$bps" -v s="$secs" -v c="$cpu" \
    'BEGIN { printf "%d,%s,%.0f,%.3f,%.3f,%.3f,%.3f\n", r, w, by, s, bps / 1e9, c, c / (by / 1e9) }' >>"$OUT/bulk.csv"
  note "bulk run $run/$RUNS $who: $(tail -n 1 "$OUT/bulk.csv")"
}

summary_bulk() {
  echo "### Bulk: one connection, ${DURATION} s, medians of $RUNS interleaved runs"
  echo
  [ $HAVE_PEREGRINE = 1 ] || echo "(Peregrine rows missing: \`peregrine perf\` was not available.)"$'\n'
  echo "Ratios are the contender's median over the reference's median (throughput: > 1 is faster; CPU: > 1 costs more)."
  echo
  echo "| contender | Gbit/s | CPU-s per GB | Gbit/s vs tcp-cubic | CPU-s/GB vs tcp-cubic | Gbit/s vs peregrine | CPU-s/GB vs peregrine | Gbit/s vs quinn | CPU-s/GB vs quinn | runs |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  local ref_g ref_c pg pc qg qc
  ref_g=$(awk -F, '$2 == "tcp-cubic" {print $5}' "$OUT/bulk.csv" | median)
  ref_c=$(awk -F, '$2 == "tcp-cubic" {print $7}' "$OUT/bulk.csv" | median)
  pg=$(awk -F, '$2 == "peregrine" {print $5}' "$OUT/bulk.csv" | median)
  pc=$(awk -F, '$2 == "peregrine" {print $7}' "$OUT/bulk.csv" | median)
  qg=$(awk -F, '$2 == "quinn" {print $5}' "$OUT/bulk.csv" | median)
  qc=$(awk -F, '$2 == "quinn" {print $7}' "$OUT/bulk.csv" | median)
  for who in "${CONTENDERS[@]}" "${BULK_INSECURE[@]}"; do
    local g c n
    g=$(awk -F, -v w="$who" '$2 == w {print $5}' "$OUT/bulk.csv" | median)
    c=$(awk -F, -v w="$who" '$2 == w {print $7}' "$OUT/bulk.csv" | median)
    n=$(awk -F, -v w="$who" '$2 == w' "$OUT/bulk.csv" | wc -l)
    awk -v w="$who" -v g="$g" -v c="$c" -v rg="$ref_g" -v rc="$ref_c" -v pg="$pg" -v pc="$pc" -v qg="$qg" -v qc="$qc" -v n="$n" '
      function ratio(a, b) { return (b + 0 > 0) ? sprintf("%.2f", a / b) : "-" }
      BEGIN { printf "| %s | %.2f | %.2f | %s | %s | %s | %s | %s | %s | %d |\n", w, g, c, ratio(g, rg), ratio(c, rc), ratio(g, pg), ratio(c, pc), ratio(g, qg), ratio(c, qc), n }'
  done
  echo
}

# ---- 2. idle connections ---------------------------------------------------------
# Empty (not an error under `set -e`) when the process is gone.
rss_kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status" 2>/dev/null || true; }
# User + system clock ticks of a process (fields 14 and 15 of /proc/PID/stat,
# counted after the parenthesised command name); empty when it is gone.
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $12 + $13}' || true; }
now_s() { date +%s.%N; }
idle_one() {
  local who=$1 port=$((BASE_PORT + 2)) client=()
  case "$who" in
    quinn)
      "$QUINN_PEER" server --listen "127.0.0.1:$port" --cert-out "$TMP/cert.der" 2>/dev/null &
      client=("$QUINN_PEER" idle --connect "127.0.0.1:$port" --connections "$IDLE_CONNECTIONS" --duration "$IDLE_HOLD" --cert "$TMP/cert.der") ;;
    peregrine)
      "$PEREGRINE" perf server --listen "127.0.0.1:$port" "${PERF_FLAGS[@]}" >/dev/null 2>&1 &
      client=("$PEREGRINE" perf client --connect "127.0.0.1:$port" --idle-connections "$IDLE_CONNECTIONS" --duration "${IDLE_HOLD}s" --json "${PERF_FLAGS[@]}") ;;
    peregrine-idle)
      "$PEREGRINE_IDLE" server --listen "127.0.0.1:$port" 2>/dev/null &
      client=("$PEREGRINE_IDLE" client --connect "127.0.0.1:$port" --connections "$IDLE_CONNECTIONS" --duration "$IDLE_HOLD") ;;
  esac
  local spid=$! before after t0 t_open t1 c1 t2 c2 cpid rc=0
  sleep 0.5
  if ! kill -0 "$spid" 2>/dev/null; then
    note "idle server of $who exited at start: its row is skipped"
    wait "$spid" 2>/dev/null || true
    return 0
  fi
  before=$(rss_kib "$spid" VmRSS)
  : >"$TMP/idle.out"
  t0=$(now_s)
  # Opening 10,000 connections took minutes before issue 20: the limit grows with the count.
  timeout $((IDLE_HOLD + 120 + IDLE_CONNECTIONS / 20)) "${client[@]}" >"$TMP/idle.out" 2>"$TMP/idle.err" &
  cpid=$!
  # Every client prints its one JSON line once all its connections are open.
  while [ ! -s "$TMP/idle.out" ] && kill -0 "$cpid" 2>/dev/null; do sleep 0.01; done
  t_open=$(now_s)
  if [ -s "$TMP/idle.out" ]; then
    t1=$(now_s); c1=$(cpu_ticks "$spid")
    sleep $((IDLE_HOLD > 2 ? IDLE_HOLD - 1 : 1))
    t2=$(now_s); c2=$(cpu_ticks "$spid")
  fi
  wait "$cpid" || rc=$?
  if [ "$rc" != 0 ] || [ ! -s "$TMP/idle.out" ]; then
    note "idle run of $who failed (exit $rc): $(tail -n 2 "$TMP/idle.err" | tr '\n' ' ')"
  else
    after=$(rss_kib "$spid" VmHWM)
    awk -v w="$who" -v n="$IDLE_CONNECTIONS" -v b="$before" -v a="$after" \
      -v o="$(echo "$t_open - $t0" | bc -l)" -v hz="$(getconf CLK_TCK)" \
      -v c="$(( ${c2:-0} - ${c1:-0} ))" -v dt="$(echo "${t2:-1} - ${t1:-0}" | bc -l)" \
      'BEGIN { printf "%s,%d,%d,%d,%.1f,%.2f,%.3f\n", w, n, b, a, (a - b) / n, o, (c / hz) / dt }' >>"$OUT/idle.csv"
    note "idle $who: $(tail -n 1 "$OUT/idle.csv")"
  fi
  kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true
}

# ---- 3. open-loop latency ----------------------------------------------------------
latency_one() {
  local sched=$1 run=$2 port=$((BASE_PORT + 3))
  # Pinned 1,452-byte datagrams, as the bulk rows (comparable with earlier runs).
  local pin=()
  read -r -a pin <<<"$(pin_flags "$PEREGRINE")"
  start_server "$TMP/s.time" "$PEREGRINE" perf server --listen "127.0.0.1:$port" --once "${PERF_FLAGS[@]}" "${pin[@]}"
  if ! timeout $((DURATION + 30)) "$PEREGRINE" perf client --connect "127.0.0.1:$port" --duration "${DURATION}s" "${PERF_FLAGS[@]}" "${pin[@]}" \
      --streams 1 --scheduler "$sched" --latency-trace "$TMP/trace.csv" --json >"$TMP/lat.json" 2>"$TMP/lat.err"; then
    note "latency run of $sched failed: $(tail -n 2 "$TMP/lat.err" | tr '\n' ' ')"
    stop_server; return 0
  fi
  stop_server
  # The priority stream is the one that carries latency samples; the bulk
  # stream's goodput is its bytes at the server (streams without samples)
  # over the run.
  jq -r --arg s "$sched" --arg r "$run" '(.duration_s) as $d
    | ([.streams[] | select(.latency_ms == null) | .bytes] | add // 0) as $bulk
    | [.streams[] | select(.latency_ms != null and .latency_ms.count > 0)][0]
    | "\($s),\(.latency_ms.count),\(.latency_ms.p50),\(.latency_ms.p99),\(.latency_ms.mean),\(if $d > 0 then $bulk * 8 / $d / 1e9 else 0 end),\($r)"' "$TMP/lat.json" >>"$OUT/latency.csv"
  note "latency $sched: $(tail -n 1 "$OUT/latency.csv")"
}
# The bulk stream alone (the same client, no latency trace): the goodput
# the latency rows' bulk column is compared with. Prints Gbit/s.
bulk_alone_once() {
  local port=$((BASE_PORT + 3)) pin=()
  read -r -a pin <<<"$(pin_flags "$PEREGRINE")"
  start_server "$TMP/s.time" "$PEREGRINE" perf server --listen "127.0.0.1:$port" --once "${PERF_FLAGS[@]}" "${pin[@]}"
  if ! timeout $((DURATION + 30)) "$PEREGRINE" perf client --connect "127.0.0.1:$port" --duration "${DURATION}s" "${PERF_FLAGS[@]}" "${pin[@]}" \
      --streams 1 --json >"$TMP/alone.json" 2>"$TMP/alone.err"; then
    note "bulk-alone run failed: $(tail -n 2 "$TMP/alone.err" | tr '\n' ' ')"
    stop_server; return 0
  fi
  stop_server
  jq -r '.throughput_bps / 1e9' "$TMP/alone.json"
}

# ---- run --------------------------------------------------------------------
{
  echo "## Peer benchmark, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "Machine: $(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), Linux $(uname -r);"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg). Command: \`$INVOCATION\`."
  echo "Binaries: peregrine = $PEREGRINE${PEREGRINE_BASELINE:+, baseline = $PEREGRINE_BASELINE}${PEREGRINE_PERF_FLAGS:+; PEREGRINE_PERF_FLAGS=$PEREGRINE_PERF_FLAGS}."
  echo
} >"$OUT/summary.md"

if [[ ",$ONLY," == *",bulk,"* ]]; then
  echo "run,contender,bytes,seconds,gbit_per_s,cpu_s,cpu_s_per_gb" >"$OUT/bulk.csv"
  for run in $(seq 1 "$RUNS"); do
    for who in "${CONTENDERS[@]}" "${BULK_INSECURE[@]}"; do bulk_once "$run" "$who"; done
  done
  summary_bulk >>"$OUT/summary.md"
  echo "load average at the end of the bulk runs: $(cut -d' ' -f1-3 /proc/loadavg)." >>"$OUT/summary.md"
  echo >>"$OUT/summary.md"
fi

if [[ ",$ONLY," == *",idle,"* ]]; then
  echo "contender,connections,rss_before_kib,rss_peak_kib,kib_per_connection,open_s,idle_cpu_cores" >"$OUT/idle.csv"
  [ $HAVE_QUINN = 1 ] && idle_one quinn
  if [ $HAVE_PEREGRINE = 1 ] && "$PEREGRINE" perf client --help 2>/dev/null | grep -q -- --idle-connections; then
    idle_one peregrine
  else
    # No perf flag: the same measurement with bench/peregrine-idle (the
    # `peregrine` crate's Endpoint API, default ConnectionConfig).
    if [ ! -x "$PEREGRINE_IDLE" ]; then
      note "building peregrine-idle (cargo build --release in bench/peregrine-idle)"
      (cd "$ROOT/bench/peregrine-idle" && cargo build --release) || true
    fi
    if [ -x "$PEREGRINE_IDLE" ]; then
      idle_one peregrine-idle
    else
      note "neither 'perf client --idle-connections' nor bench/peregrine-idle is available: the Peregrine idle row is missing"
    fi
  fi
  {
    echo "### $IDLE_CONNECTIONS idle connections on one server endpoint, held ${IDLE_HOLD} s"
    echo
    echo "| contender | RSS before (KiB) | peak RSS (KiB) | KiB per connection | open (s) | idle CPU (cores) |"
    echo "|---|---:|---:|---:|---:|---:|"
    tail -n +2 "$OUT/idle.csv" | awk -F, '{ printf "| %s | %d | %d | %.1f | %.2f | %.3f |\n", $1, $3, $4, $5, $6, $7 }'
    echo
  } >>"$OUT/summary.md"
fi

if [[ ",$ONLY," == *",latency,"* ]]; then
  LATENCY_RUNS=${LATENCY_RUNS:-$RUNS}
  echo "scheduler,count,p50_ms,p99_ms,mean_ms,bulk_gbps,run" >"$OUT/latency.csv"
  ALONE=()
  if [ $HAVE_PEREGRINE = 1 ]; then
    # 1,000 messages/s of 200 bytes (the drone trace's format: gap before each message).
    { echo "Delays,Data Length"; for _ in $(seq 1 $((DURATION * 1000))); do echo "1000us,200"; done; } >"$TMP/trace.csv"
    # Bulk alone before the first round and after every round: drift hits both.
    g=$(bulk_alone_once); [ -n "$g" ] && ALONE+=("$g") && note "bulk alone (before): $g Gbit/s"
    for run in $(seq 1 "$LATENCY_RUNS"); do
      for sched in $SCHEDULERS; do latency_one "$sched" "$run"; done
      g=$(bulk_alone_once); [ -n "$g" ] && ALONE+=("$g") && note "bulk alone (after round $run): $g Gbit/s"
    done
  fi
  ALONE_G=nan
  [ ${#ALONE[@]} -gt 0 ] && ALONE_G=$(printf '%s\n' "${ALONE[@]}" | median)
  [ ${#ALONE[@]} -gt 0 ] && echo "bulk-alone,0,,,,$ALONE_G," >>"$OUT/latency.csv"
  {
    echo "### Open-loop latency: 1,000 msg/s × 200 B on a priority stream beside a saturating bulk stream (${DURATION} s, medians of $LATENCY_RUNS interleaved rounds)"
    echo
    [ $HAVE_PEREGRINE = 1 ] || echo "(missing: \`peregrine perf\` was not available.)"$'\n'
    echo "Per scheduler, the median over the rounds of each run's p50, p99, mean and bulk goodput; p99 range: the"
    echo "rounds' lowest and highest p99. bulk Gbit/s: the bulk stream's goodput during the run; vs alone: over the"
    echo "bulk-alone row (the same client without the priority stream, median of a run before the first round and"
    echo "one after every round: ${ALONE[*]:-none} Gbit/s)."
    echo
    echo "| scheduler | runs | messages | p50 ms | p99 ms | p99 range ms | mean ms | bulk Gbit/s | bulk vs alone |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    for sched in $SCHEDULERS; do
      rows=$(awk -F, -v s="$sched" 'NR > 1 && $1 == s' "$OUT/latency.csv")
      [ -n "$rows" ] || continue
      col() { printf '%s\n' "$rows" | cut -d, -f"$1" | median; }
      n=$(printf '%s\n' "$rows" | wc -l)
      lo=$(printf '%s\n' "$rows" | cut -d, -f4 | sort -g | head -n 1)
      hi=$(printf '%s\n' "$rows" | cut -d, -f4 | sort -g | tail -n 1)
      awk -v s="$sched" -v n="$n" -v c="$(col 2)" -v p50="$(col 3)" -v p99="$(col 4)" -v lo="$lo" -v hi="$hi" \
        -v mean="$(col 5)" -v bulk="$(col 6)" -v alone="$ALONE_G" 'BEGIN {
          r = (alone + 0 > 0) ? sprintf("%.2f", bulk / alone) : "-"
          printf "| %s | %d | %d | %.3f | %.3f | %.3f–%.3f | %.3f | %.2f | %s |\n", s, n, c, p50, p99, lo, hi, mean, bulk, r }'
    done
    [ ${#ALONE[@]} -gt 0 ] && printf '| bulk-alone | %d | - | - | - | - | - | %.2f | 1.00 |\n' "${#ALONE[@]}" "$ALONE_G"
    echo
  } >>"$OUT/summary.md"
fi

cat "$OUT/summary.md"
note "results in $OUT (bulk.csv, idle.csv, latency.csv, summary.md)"
