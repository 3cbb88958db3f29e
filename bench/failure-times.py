#!/usr/bin/env python3
"""Time the failure cases of issue 21 with one `peregrine` binary, over
127.0.0.1 (docs/perf.md, "Failures, interruptions and exit status").

usage: python3 bench/failure-times.py BINARY PORT [TAG]

PORT is the fixed UDP port of the restart case (the server is killed and
started again on it with the same --key, written to
/tmp/wtfail-meas/keyTAG). Prints one line per case: seconds from the
event to the exit, the exit status, the last stderr line and stdout.
Cases: a port with nothing listening, a wrong --peer-key, --insecure
against an encrypted server, a server SIGKILLed during a bulk run, a
server SIGKILLed and restarted with the same key on the same port, and a
`perf server --once` whose client is SIGKILLed."""
import subprocess, sys, time, socket, os, signal, json
B = sys.argv[1]; base = int(sys.argv[2]); tag = sys.argv[3] if len(sys.argv) > 3 else ""
def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
def server(args):
    p = subprocess.Popen([B, "perf", "server"] + args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    line = p.stderr.readline().strip()
    return p, line.replace("listening on ", "")
def last_line(s):
    ls = [l for l in s.strip().splitlines() if l.strip()]
    return ls[-1] if ls else ""
res = {}
# 1 refused
port = free_port()
t0 = time.monotonic()
r = subprocess.run([B, "perf", "client", "--connect", f"127.0.0.1:{port}", "--json"], capture_output=True, text=True)
res["refused"] = (round(time.monotonic() - t0, 3), r.returncode, last_line(r.stderr), r.stdout.strip()[:300])
# 2 wrong peer key
s, addr = server(["--listen", "127.0.0.1:0"])
t0 = time.monotonic()
r = subprocess.run([B, "perf", "client", "--connect", addr, "--json", "--peer-key", "11" * 32], capture_output=True, text=True)
res["wrong_peer_key"] = (round(time.monotonic() - t0, 3), r.returncode, last_line(r.stderr), r.stdout.strip()[:300])
# 2b insecure vs encrypted
t0 = time.monotonic()
r = subprocess.run([B, "perf", "client", "--connect", addr, "--json", "--insecure"], capture_output=True, text=True)
res["insecure_vs_encrypted"] = (round(time.monotonic() - t0, 3), r.returncode, last_line(r.stderr), r.stdout.strip()[:300])
s.kill(); s.wait()
# 3 SIGKILLed server during bulk (encrypted default)
s, addr = server(["--listen", "127.0.0.1:0"])
c = subprocess.Popen([B, "perf", "client", "--connect", addr, "--json", "--duration", "60s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
time.sleep(1.0)
s.kill(); s.wait()
t0 = time.monotonic()
out, err = c.communicate(timeout=120)
res["sigkill_server"] = (round(time.monotonic() - t0, 3), c.returncode, last_line(err), out.strip()[:300])
# 4 restart with the same --key on the same port
os.makedirs("/tmp/wtfail-meas", exist_ok=True)
kd = f"/tmp/wtfail-meas/key{tag}"
if not os.path.exists(kd):
    subprocess.run([B, "keygen", "--out", kd], capture_output=True)
port = base
s, addr = server(["--listen", f"127.0.0.1:{port}", "--key", kd])
c = subprocess.Popen([B, "perf", "client", "--connect", addr, "--json", "--duration", "60s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
time.sleep(1.0)
s.kill(); s.wait()
s2, _ = server(["--listen", f"127.0.0.1:{port}", "--key", kd])
t0 = time.monotonic()
out, err = c.communicate(timeout=120)
res["restart_same_key"] = (round(time.monotonic() - t0, 3), c.returncode, last_line(err), out.strip()[:300])
s2.kill(); s2.wait()
# 5 --once server, SIGKILLed client
s, addr = server(["--listen", "127.0.0.1:0", "--once"])
c = subprocess.Popen([B, "perf", "client", "--connect", addr, "--duration", "60s"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(1.0)
c.kill(); c.wait()
t0 = time.monotonic()
try:
    _, err = s.communicate(timeout=60)
    res["once_server_client_killed"] = (round(time.monotonic() - t0, 3), s.returncode, err.strip().splitlines()[-3:])
except subprocess.TimeoutExpired:
    s.kill(); _, err = s.communicate()
    res["once_server_client_killed"] = (">60", None, err.strip().splitlines()[-3:])
for k, v in res.items():
    print(k, json.dumps(v))
