#!/usr/bin/env bash
# Regenerates grid.fcd.xml, the SUMO floating-car-data trace that
# two-cars.toml replays (format = "sumo-fcd") and that the SUMO test of
# crates/sim/tests/sumo_fcd.rs compares positions against.
#
# It was made with Eclipse SUMO 1.15.0 (Debian bookworm: apt-get install
# sumo) by exactly these two commands: a 3 × 3 grid of 200 m blocks with
# one lane per edge, and the two cars of grid.rou.xml driven for 30 s in
# 1 s steps. The network (grid.net.xml) is not committed: netgenerate
# makes it again from this line.
set -euo pipefail
cd "$(dirname "$0")"
export SUMO_HOME=${SUMO_HOME:-/usr/share/sumo}
netgenerate --grid --grid.number=3 --grid.length=200 --default.lanenumber=1 --seed 1 -o grid.net.xml
sumo -n grid.net.xml -r grid.rou.xml --begin 0 --end 30 --step-length 1 \
     --fcd-output grid.fcd.xml --no-step-log true --seed 1
rm -f grid.net.xml
