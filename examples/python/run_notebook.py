"""Execute a notebook with nbclient (as CI does) and save the executed copy.

    python examples/python/run_notebook.py examples/python/seed_figure.ipynb [--out out/python]
"""

import argparse
import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("notebook", type=Path)
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "python")
    ap.add_argument("--timeout", type=int, default=600)
    args = ap.parse_args()
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(args.notebook, as_version=4)
    # The notebook reads where to write its figure from the environment.
    os.environ["PEREGRINE_OUT"] = str(args.out)
    NotebookClient(
        nb, timeout=args.timeout, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    ).execute()
    done = args.out / args.notebook.name
    nbformat.write(nb, done)
    print(f"executed {args.notebook} → {done}")


if __name__ == "__main__":
    main()
