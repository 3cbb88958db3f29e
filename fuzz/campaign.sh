#!/usr/bin/env bash
# Runs libFuzzer targets for a fixed wall time each, one after another, at
# the lowest CPU priority, and prints one summary line per target.
# usage: fuzz/campaign.sh FUZZ_DIR OUT_DIR SECONDS target...
#   e.g. fuzz/campaign.sh fuzz /tmp/fuzz-out 600 endpoint handshake
# after `cd fuzz && cargo +nightly fuzz build -O`; appends one line per
# target (seconds, executions, coverage, features, corpus, crashes) to
# OUT_DIR/summary.txt. Issue 37's campaign table came from it.
set -u
fuzz_dir=$1; out=$2; secs=$3; shift 3
bin=$fuzz_dir/target/x86_64-unknown-linux-gnu/release
mkdir -p "$out"
for t in "$@"; do
  corpus=$out/corpus/$t; art=$out/artifacts/$t/; mkdir -p "$corpus" "$art"
  [ -d "$fuzz_dir/corpus/$t" ] && cp -n "$fuzz_dir/corpus/$t"/* "$corpus"/ 2>/dev/null
  start=$(date -u +%H:%M:%S)
  nice -n 10 "$bin/$t" "$corpus" -max_total_time="$secs" -print_final_stats=1 \
      -artifact_prefix="$art" > "$out/$t.log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/$t.log" | grep -o '[0-9]*$')
  cov=$(grep -E '^#[0-9]+' "$out/$t.log" | tail -1 | grep -o 'cov: [0-9]*' | grep -o '[0-9]*')
  ft=$(grep -E '^#[0-9]+' "$out/$t.log" | tail -1 | grep -o 'ft: [0-9]*' | grep -o '[0-9]*')
  secs_done=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$out/$t.log" | grep -o 'in [0-9]*' | grep -o '[0-9]*')
  crashes=$(ls "$art" | wc -l)
  echo "$t start=$start rc=$rc seconds=${secs_done:-?} execs=${runs:-?} cov=${cov:-?} ft=${ft:-?} corpus=$(ls $corpus | wc -l) crashes=$crashes" >> "$out/summary.txt"
done
