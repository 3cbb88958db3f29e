#!/usr/bin/env python3
"""The ground-station side of the MAVLink check: a pymavlink endpoint that
sends (``udpout``) a HEARTBEAT every second and a COMMAND_LONG
(MAV_CMD_REQUEST_MESSAGE, param1 = sequence number) every ``--period``,
and times each one until its COMMAND_ACK (``result_param2`` = sequence)
comes back. Prints one line:

    commander sent=N acked=N lost=N p50_ms=X p99_ms=X max_ms=X heartbeats=N

A command not acknowledged within ``--timeout`` counts as lost.

    python commander.py --connect 127.0.0.1:14550 --duration 15 [--period 0.1]
"""
import argparse
import os
import sys
import time

os.environ.setdefault("MAVLINK20", "1")
from pymavlink import mavutil  # noqa: E402


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * len(xs) + 0.5)) - 1))
    return xs[k]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connect", required=True, help="HOST:PORT of the vehicle (or the tunnel's local port)")
    ap.add_argument("--duration", type=float, default=15.0)
    ap.add_argument("--period", type=float, default=0.1, help="seconds between commands")
    ap.add_argument("--timeout", type=float, default=2.0)
    a = ap.parse_args()
    m = mavutil.mavlink_connection(f"udpout:{a.connect}", source_system=255, source_component=190)
    sent = {}
    rtts = []
    heartbeats = 0
    seq = 0
    start = time.monotonic()
    next_cmd = start
    next_hb = start
    end = start + a.duration
    while True:
        now = time.monotonic()
        if now >= end and (not sent or now >= end + a.timeout):
            break
        if now >= next_hb:
            m.mav.heartbeat_send(mavutil.mavlink.MAV_TYPE_GCS, mavutil.mavlink.MAV_AUTOPILOT_INVALID, 0, 0, 0)
            next_hb += 1.0
        if now < end and now >= next_cmd:
            seq += 1
            sent[seq] = time.monotonic()
            m.mav.command_long_send(1, 1, mavutil.mavlink.MAV_CMD_REQUEST_MESSAGE, 0,
                                    float(seq), 0, 0, 0, 0, 0, 0)
            next_cmd += a.period
        wait = max(0.0, min(next_cmd, next_hb) - time.monotonic())
        msg = m.recv_match(type=["COMMAND_ACK", "HEARTBEAT"], blocking=True, timeout=min(wait, 0.05))
        if msg is None:
            # Expire commands older than the timeout.
            cut = time.monotonic() - a.timeout
            for s in [s for s, t in sent.items() if t < cut]:
                del sent[s]
            continue
        if msg.get_type() == "HEARTBEAT":
            heartbeats += 1
            continue
        t0 = sent.pop(int(msg.result_param2), None)
        if t0 is not None:
            rtts.append((time.monotonic() - t0) * 1e3)
    n = seq
    print(f"commander sent={n} acked={len(rtts)} lost={n - len(rtts)} "
          f"p50_ms={pct(rtts, 50):.1f} p99_ms={pct(rtts, 99):.1f} "
          f"max_ms={max(rtts) if rtts else float('nan'):.1f} heartbeats={heartbeats}")
    return 0 if rtts else 1


if __name__ == "__main__":
    sys.exit(main())
