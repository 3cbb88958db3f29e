#!/usr/bin/env python3
"""Assemble docs/cc.md from the per-controller fragments in docs/cc-parts/.

Run from the repository root:  python3 docs/build-cc-doc.py
(`--check`: only verify that the committed document is up to date; .ci/run does.)
The plots it links are regenerated with:  cargo run --release -- cc plot --out docs/img/cc
"""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent


def registry_order():
    """The listed controllers, in registry order, read from the one list
    of controllers (crates/cc/src/registry.rs, its `listed { … }` block):
    a controller registered there without a fragment here is an error."""
    src = (root.parent / "crates" / "cc" / "src" / "registry.rs").read_text()
    block = re.search(r"^registry! \{\s*listed \{(.*?)^    \}", src, re.S | re.M)
    if block is None:
        raise SystemExit("crates/cc/src/registry.rs: no `registry! { listed { … } }` block")
    names = re.findall(r'^\s*"([a-z0-9_]+)" =>', block.group(1), re.M)
    if not names:
        raise SystemExit("crates/cc/src/registry.rs: the listed block names no controller")
    return names


ORDER = registry_order()
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
