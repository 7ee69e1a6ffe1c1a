"""What JAX's persistent compilation cache (methods/pgm.py) saves a Private-PGM cell, and that it
moves no number: one method's paper-profile fit on a dataset, each in a fresh interpreter as a grid
cell runs — without the cache, then into an empty cache, then from the filled one at the same seed
and at the next — with the wall time of fit and sample and the SHA-256 of the stored sample.

    python benchmarks/jax_cache.py --method mst --dataset adult-discrete --json FILE

Times taken on a busy machine are upper bounds; the order (uncached, cold, warm) repeats per
``--repeats`` so that a ratio compares neighbours.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.harness.worker import HASH_SEED

FIT = """
import hashlib, sys, tempfile, time
from pathlib import Path
import bench
from bench.harness.samples import SAMPLE_FILE
method, dataset, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
out = Path(tempfile.mkdtemp())
start = time.perf_counter()
result = bench.run_cell(method, dataset, epsilon=1.0, seed=seed, evaluators=(), profile="paper", protocol="paper", out=out)
seconds = time.perf_counter() - start
assert result.ok, result.error
print(seconds, hashlib.sha256((out / SAMPLE_FILE).read_bytes()).hexdigest())
"""


def cell(method: str, dataset: str, seed: int, cache: Path | None) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": HASH_SEED}  # as the grid starts a cell (mbi's sampler iterates a set)
    if cache is None:
        env["JAX_ENABLE_COMPILATION_CACHE"] = "false"
    else:
        env["DPBENCH_CACHE_DIR"], env["DPBENCH_JAX_CACHE"] = str(cache), "1"
    done = subprocess.run(
        [sys.executable, "-c", FIT, method, dataset, str(seed)], env=env, capture_output=True, text=True, check=True
    )
    seconds, sha = done.stdout.split()[-2:]
    return {"seed": seed, "seconds": round(float(seconds), 1), "sample_sha256": sha}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--method", default="mst")
    parser.add_argument("--dataset", default="adult-discrete")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--more-seeds", type=int, default=0, help="seeds 2, 3, … cached and uncached, alternating")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rounds = []
    for _ in range(args.repeats):
        cache = Path(tempfile.mkdtemp()) / "cache"
        found = {
            "uncached": cell(args.method, args.dataset, 0, None),
            "cold": cell(args.method, args.dataset, 0, cache),
            "warm_same_seed": cell(args.method, args.dataset, 0, cache),
            "warm_next_seed": cell(args.method, args.dataset, 1, cache),
            "uncached_next_seed": cell(args.method, args.dataset, 1, None),
        }
        # further seeds, cached and uncached side by side in alternating order (a load that drifts
        # between the two then favours each side once): what a later cell of a new seed gains
        for seed in range(2, 2 + args.more_seeds):
            order = ("cached", "uncached") if seed % 2 == 0 else ("uncached", "cached")
            for kind in order:
                found[f"{kind}_seed_{seed}"] = cell(
                    args.method, args.dataset, seed, cache if kind == "cached" else None
                )
        found["programs_cached"] = len(list((cache / "jax").iterdir()))
        print(json.dumps(found), flush=True)
        rounds.append(found)
    if args.json:
        record = {"command": " ".join(sys.argv), "method": args.method, "dataset": args.dataset, "rounds": rounds}
        args.json.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
