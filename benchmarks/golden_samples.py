"""Fingerprints of the synthetic samples of a few cells, to show that a refactoring moved no number:
run it in a checkout of the old commit and of the new one (``git worktree add``) and compare.

    PYTHONPATH=/path/to/checkout python benchmarks/golden_samples.py [--data-dir DIR] [--only dp-gan,dp-cgan]

Each cell runs in-process through ``bench.run_cell`` (smoke profile, seed 0, ε = 1); the
fingerprint is the SHA-256 of its ``synthetic_sample.csv``. The cells are the DP-SGD ones whose
batch sampling moved into the ledger in issue 29, and one of each method family whose ``fit``
moved onto the ``PrivateData`` handle (``independent`` onto its count queries).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
from pathlib import Path

import bench

CELLS = [
    ("dp-gan", "cervical", {"epochs": "2"}),
    ("dp-cgan", "gmm2d", {}),
    ("dp-gan", "gmm2d", {"batch_size": "500"}),
    ("independent", "cervical", {}),
    ("independent", "adult-discrete", {}),
    ("uniform", "cervical", {}),
    ("real", "cervical", {}),
    ("dp-merf", "gmm2d", {"epochs": "1"}),
    ("dp-hp", "cervical", {}),
    ("mst", "adult-discrete", {}),
    ("privbayes", "adult-discrete", {}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=os.environ.get("DPBENCH_DATA_DIR"))
    parser.add_argument("--only", help="comma-separated methods: fingerprint only their cells")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None
    found = {}
    for method, dataset, overrides in CELLS:
        if only is not None and method not in only:
            continue
        out = Path(tempfile.mkdtemp())
        result = bench.run_cell(
            method,
            dataset,
            epsilon=1.0,
            evaluators=(),
            profile="smoke",
            data_dir=args.data_dir,
            overrides=overrides or None,
            out=out,
        )
        digest = (
            hashlib.sha256((out / "synthetic_sample.csv").read_bytes()).hexdigest()[:16] if result.ok else result.error
        )
        found[f"{method}/{dataset}/{json.dumps(overrides)}"] = digest
    print(json.dumps(found, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
