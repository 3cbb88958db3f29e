#!/usr/bin/env python3
"""Assemble docs/simulator.md from docs/simulator-head.md (engine, links, traces,
apps, metrics) and the world-model sections in docs/sim-parts/.

Run from the repository root:  python3 docs/build-simulator-doc.py
"""
import pathlib

ORDER = ["mobility", "wifi", "routing", "wireless", "mmwave"]
root = pathlib.Path(__file__).resolve().parent
head = (root / "simulator-head.md").read_text()
parts = []
for name in ORDER:
    frag = root / "sim-parts" / f"{name}.md"
    if not frag.exists():
        raise SystemExit(f"missing fragment {frag}")
    parts.append(frag.read_text().rstrip() + "\n")
(root / "simulator.md").write_text(head.rstrip() + "\n\n" + "\n".join(parts))
print("wrote", root / "simulator.md")
