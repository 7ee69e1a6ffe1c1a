"""Wall time and peak memory of the ``privacy`` and ``fidelity`` evaluators beside ``downstream``
(issue 30: both together must cost no more than the downstream evaluator on adult).

    python benchmarks/bench_output_privacy.py --dataset adult [--repeats 3] [--data-dir DIR]
    python benchmarks/bench_output_privacy.py --dataset census --only privacy,fidelity

The synthetic rows are the real training rows (``real``'s output: the attacks' worst case, and
the same size as any generator's sample). The evaluators alternate within each repeat, each in a
fresh child process, so each peak RSS is its own; the median wall time of the repeats is shown.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = """
import json, resource, sys, time
from bench.api.contracts import EvalContext
from bench.api.registry import DATASETS, EVALUATORS
dataset, name, data_dir = sys.argv[1], sys.argv[2], sys.argv[3] or None
split = DATASETS.get(dataset).load(data_dir, 0)
started = time.perf_counter()
EVALUATORS.get(name).evaluate(split.train, split.train, split.test, EvalContext(seed=0, data_dir=data_dir))
wall = time.perf_counter() - started
print(json.dumps({"wall_s": wall, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(dataset: str, evaluator: str, data_dir: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, dataset, evaluator, data_dir],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="adult")
    parser.add_argument("--only", default="downstream,privacy,fidelity", help="evaluators, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data-dir", default=os.environ.get("DPBENCH_DATA_DIR", ""))
    args = parser.parse_args()
    names = args.only.split(",")
    runs: dict[str, list[dict]] = {name: [] for name in names}
    for repeat in range(args.repeats):
        for name in names:
            runs[name].append(measure(args.dataset, name, args.data_dir))
            print(f"repeat {repeat}: {name} {runs[name][-1]}", flush=True)
    print(f"\n{args.dataset}, median of {args.repeats} (wall s, peak MiB of the evaluating process):")
    for name in names:
        print(
            f"  {name:12s} {statistics.median(r['wall_s'] for r in runs[name]):8.1f} s  "
            f"{max(r['peak_mib'] for r in runs[name]):8.0f} MiB"
        )
    if {"downstream", "privacy", "fidelity"} <= set(names):
        both = statistics.median(p["wall_s"] + f["wall_s"] for p, f in zip(runs["privacy"], runs["fidelity"]))
        print(
            f"  privacy + fidelity / downstream = {both / statistics.median(r['wall_s'] for r in runs['downstream']):.2f}"
        )


if __name__ == "__main__":
    main()
