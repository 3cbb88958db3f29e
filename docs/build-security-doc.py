#!/usr/bin/env python3
"""Assemble docs/security.md from docs/security-head.md (threat model,
defaults, packet protection), the part files in docs/security-parts/
(handshake, key update and ID rotation, admission, runtime, fuzzing,
cost) and docs/security-tail.md.

Run from the repository root:  python3 docs/build-security-doc.py
(`--check`: only verify that the committed document is up to date; .ci/run does.)
"""
import pathlib
import sys

ORDER = ["noise", "keys", "admission", "runtime", "fuzz", "cost"]
root = pathlib.Path(__file__).resolve().parent
pieces = [(root / "security-head.md").read_text().rstrip() + "\n"]
for name in ORDER:
    frag = root / "security-parts" / f"{name}.md"
    if not frag.exists():
        raise SystemExit(f"missing fragment {frag}")
    pieces.append(frag.read_text().rstrip() + "\n")
pieces.append((root / "security-tail.md").read_text().rstrip() + "\n")
text = "\n".join(pieces)
target = root / "security.md"
if "--check" in sys.argv[1:]:
    # .ci/run: the committed document must be what its parts assemble to.
    if not target.exists() or target.read_text() != text:
        raise SystemExit(f"{target} is out of date with its parts: run python3 {__file__}")
else:
    target.write_text(text)
    print("wrote", target)
