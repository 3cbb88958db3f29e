#!/usr/bin/env python3
"""Assemble docs/cc.md from the per-controller fragments in docs/cc-parts/.

Run from the repository root:  python3 docs/build-cc-doc.py
(`--check`: only verify that the committed document is up to date; .ci/run does.)
The plots it links are regenerated with:  cargo run --release -- cc plot --out docs/img/cc
"""
import pathlib
import sys

ORDER = ["newreno", "hybla", "highspeed", "htcp", "vegas", "scalable", "veno", "bic", "yeah",
         "cubic", "westwood", "illinois", "compound", "bbr", "shtcp", "rtwtcp"]
root = pathlib.Path(__file__).resolve().parent
head = (root / "cc-head.md").read_text()
parts = []
for name in ORDER:
    frag = root / "cc-parts" / f"{name}.md"
    if not frag.exists():
        raise SystemExit(f"missing fragment {frag}")
    text = frag.read_text().rstrip() + "\n"
    text += f"\n![{name} in the controller lab](img/cc/{name}.svg)\n"
    parts.append(text)
text = head.rstrip() + "\n\n" + "\n---\n\n".join(parts)
target = root / "cc.md"
if "--check" in sys.argv[1:]:
    # .ci/run: the committed document must be what its parts assemble to.
    if not target.exists() or target.read_text() != text:
        raise SystemExit(f"{target} is out of date with its parts: run python3 {__file__}")
else:
    target.write_text(text)
    print("wrote", target)
