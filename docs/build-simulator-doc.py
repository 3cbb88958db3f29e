#!/usr/bin/env python3
"""Assemble docs/simulator.md from docs/simulator-head.md (engine, links, traces,
apps, metrics) and the world-model sections in docs/sim-parts/.

Run from the repository root:  python3 docs/build-simulator-doc.py
(`--check`: only verify that the committed document is up to date; .ci/run does.)
"""
import pathlib
import sys

ORDER = ["mobility", "wifi", "dcf", "routing", "wireless", "mmwave"]
root = pathlib.Path(__file__).resolve().parent
head = (root / "simulator-head.md").read_text()
parts = []
for name in ORDER:
    frag = root / "sim-parts" / f"{name}.md"
    if not frag.exists():
        raise SystemExit(f"missing fragment {frag}")
    parts.append(frag.read_text().rstrip() + "\n")
text = head.rstrip() + "\n\n" + "\n".join(parts)
target = root / "simulator.md"
if "--check" in sys.argv[1:]:
    # .ci/run: the committed document must be what its parts assemble to.
    if not target.exists() or target.read_text() != text:
        raise SystemExit(f"{target} is out of date with its parts: run python3 {__file__}")
else:
    target.write_text(text)
    print("wrote", target)
