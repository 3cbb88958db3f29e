#!/usr/bin/env python3
"""The vehicle side of the MAVLink check: a pymavlink endpoint that listens
on UDP (``udpin``), sends a HEARTBEAT every second to whoever talks to it,
and answers every COMMAND_LONG at once with a COMMAND_ACK whose
``result_param2`` echoes the command's ``param1`` (the commander's sequence
number), so the commander can time each round trip.

    python responder.py --listen 0.0.0.0:14550 [--duration 60]
"""
import argparse
import os
import sys
import time

os.environ.setdefault("MAVLINK20", "1")  # COMMAND_ACK.result_param2 is a MAVLink 2 extension
from pymavlink import mavutil  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", default="0.0.0.0:14550")
    ap.add_argument("--duration", type=float, default=3600.0)
    a = ap.parse_args()
    m = mavutil.mavlink_connection(f"udpin:{a.listen}", source_system=1, source_component=1)
    end = time.monotonic() + a.duration
    next_hb = 0.0
    acks = 0
    peer_seen = False  # udpin answers whoever sent last; nobody yet
    while time.monotonic() < end:
        now = time.monotonic()
        # udpin learns the peer from the first datagram; heartbeats go there.
        if now >= next_hb and peer_seen:
            m.mav.heartbeat_send(mavutil.mavlink.MAV_TYPE_QUADROTOR,
                                 mavutil.mavlink.MAV_AUTOPILOT_GENERIC, 0, 0,
                                 mavutil.mavlink.MAV_STATE_ACTIVE)
            next_hb = now + 1.0
        msg = m.recv_match(type=["COMMAND_LONG", "HEARTBEAT"], blocking=True, timeout=0.2)
        if msg is None:
            continue
        peer_seen = True
        if msg.get_type() != "COMMAND_LONG":
            continue
        m.mav.command_ack_send(msg.command, mavutil.mavlink.MAV_RESULT_ACCEPTED,
                               0, int(msg.param1), msg.get_srcSystem(), msg.get_srcComponent())
        acks += 1
    print(f"responder acks={acks}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
