#!/usr/bin/env python3
"""Seeds fuzz/corpus/<target>/ from the test vectors of docs/protocol.md.

Every `<!-- vector: NAME -->` hex block becomes `vector-NAME` in the
`datagram` and `header` corpora, and its payload (bytes 20.. of the
datagram) goes to the corpus of the payload decoder for its PK_TYPE.
Run from anywhere: python3 fuzz/seed_corpus.py
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent
DOC = ROOT.parent / "docs" / "protocol.md"
# PK_TYPE code -> payload fuzz target
PAYLOAD_TARGET = {
    1: "start", 2: "reject", 3: "data", 4: "ack", 5: "nack",
    6: "bare", 7: "bare", 8: "echo", 9: "echo", 10: "echo",
    11: "bare", 12: "bare", 13: "cwin", 14: "group", 15: "group",
}

def vectors(text):
    for m in re.finditer(r"<!-- vector: (\S+) -->\s*```text\n(.*?)```", text, re.S):
        yield m.group(1), bytes.fromhex("".join(m.group(2).split()))

def main():
    n = 0
    for name, data in vectors(DOC.read_text()):
        targets = ["datagram", "header", PAYLOAD_TARGET[data[4] >> 4]]
        for target, blob in zip(targets, [data, data, data[20:]]):
            out = ROOT / "corpus" / target
            out.mkdir(parents=True, exist_ok=True)
            (out / f"vector-{name}").write_bytes(blob)
            n += 1
    print(f"wrote {n} seed files from {DOC}")

if __name__ == "__main__":
    main()
