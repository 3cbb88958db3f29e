#!/bin/sh
# Regenerates the committed seed corpora (fuzz/corpus/<target>/seed-*) from
# real runs of the endpoint pair (examples/gen_corpus.rs), then the
# docs/protocol.md test vectors (seed_corpus.py, vector-*). Stable Rust is
# enough. Run from anywhere.
set -eu
cd "$(dirname "$0")"
cargo run --quiet --example gen_corpus
python3 seed_corpus.py
