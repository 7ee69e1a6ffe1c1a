"""Wall time of the local and Ray executors on the same grids (each in a fresh folder and store).

    python benchmarks/bench_executor.py [--cells 8] [--only local|ray]

1. per-cell overhead: ``--methods real --datasets gmm2d --profile smoke`` with ``--cells`` seeds,
   ``--jobs 1``: wall time / cells, local vs ``--executor ray`` (a local Ray instance started by
   the run, so its start-up is included once);
2. a 16-cell smoke grid (real × 4 seeds + dp-merf × 3 ε × 4 seeds, 1 epoch) with ``--jobs 2``,
   local vs ``--executor ray``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(args: list[str]) -> float:
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": str(REPO)}
        env.pop("MLFLOW_TRACKING_URI", None)
        started = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "-m", "bench", *args, "--no-progress"], cwd=folder, env=env, capture_output=True, text=True
        )
        elapsed = time.perf_counter() - started
        if result.returncode != 0:
            sys.exit(f"failed: {' '.join(args)}\n{result.stdout}{result.stderr}")
        return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cells", type=int, default=8)
    parser.add_argument("--only", choices=("local", "ray"), help="time one executor only")
    args = parser.parse_args()
    executors = [
        (name, extra) for name, extra in (("local", []), ("ray", ["--executor", "ray"])) if args.only in (None, name)
    ]

    tiny = [
        "run",
        "--methods",
        "real",
        "--datasets",
        "gmm2d",
        "--profile",
        "smoke",
        "--seeds",
        f"0-{args.cells - 1}",
        "--jobs",
        "1",
    ]
    for name, extra in executors:
        elapsed = timed(tiny + extra)
        print(
            f"real × {args.cells} cells, --jobs 1, {name}: {elapsed:.1f} s, {elapsed / args.cells:.2f} s/cell",
            flush=True,
        )

    grid = [
        "run",
        "--methods",
        "real,dp-merf",
        "--datasets",
        "gmm2d",
        "--eps",
        "0.3,1,3",
        "--seeds",
        "0-3",
        "--profile",
        "smoke",
        "--set",
        "dp-merf.epochs=1",
        "--jobs",
        "2",
    ]
    for name, extra in executors:
        elapsed = timed(grid + extra)
        print(f"16-cell smoke grid, --jobs 2, {name}: {elapsed:.1f} s", flush=True)


if __name__ == "__main__":
    main()
