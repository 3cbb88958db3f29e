#!/usr/bin/env python3
"""Assemble docs/security.md from docs/security-head.md (threat model,
defaults, packet protection), the part files in docs/security-parts/
(handshake, admission, runtime, fuzzing, cost) and docs/security-tail.md.

Run from the repository root:  python3 docs/build-security-doc.py
"""
import pathlib

ORDER = ["noise", "admission", "runtime", "fuzz", "cost"]
root = pathlib.Path(__file__).resolve().parent
pieces = [(root / "security-head.md").read_text().rstrip() + "\n"]
for name in ORDER:
    frag = root / "security-parts" / f"{name}.md"
    if not frag.exists():
        raise SystemExit(f"missing fragment {frag}")
    pieces.append(frag.read_text().rstrip() + "\n")
pieces.append((root / "security-tail.md").read_text().rstrip() + "\n")
(root / "security.md").write_text("\n".join(pieces))
print("wrote", root / "security.md")
