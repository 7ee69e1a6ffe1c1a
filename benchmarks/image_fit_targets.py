"""Issue 55's fit targets on two cores: the paper-setting MNIST fits of DP-HP, DP-MERF, DP-GAN and
DP-CGAN, timed the way ``image_cell_costs.py`` times a fit, at ``--threads`` (2: both cores).

    python benchmarks/image_fit_targets.py [--repeats 3] [--seconds 120] [--only dp-hp,dp-merf] [--out FILE]

Each fit runs through the grid's worker (seed 0, the preset's ε, no evaluators) and is stopped
``--seconds`` after its first progress report; its cost is the time to that report (loading, any
one-off release) plus the measured seconds per step times the steps left. The runs alternate over
the methods, ``--repeats`` rounds, and the median of each is set beside the issue's target. Run it
on an otherwise idle machine from a clean tree: the file names the commit, the CPU and the load
average seen before and after each run (a figure taken under load is marked so).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import torch
from image_cell_costs import measure

from bench.harness.provenance import git_commit

# (method, dataset, ε, target fit seconds on 2 idle cores): issue 55's "Done when"
TARGETS = (
    ("dp-hp", "mnist", 1.0, 15 * 60),
    ("dp-merf", "mnist", 1.0, 8 * 60),
    ("dp-gan", "mnist", 9.6, 10 * 60),
    ("dp-cgan", "mnist", 9.6, 10 * 60),
)
OUT = (
    Path(__file__).resolve().parents[1]
    / "docs"
    / "measurements"
    / f"image_fit_targets_{time.strftime('%Y-%m-%d')}.json"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=120.0, help="fit time measured after the first report")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", help="comma-separated methods of TARGETS")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from bench.harness.worker import cpu_description

    only = set(args.only.split(",")) if args.only else None
    targets = [t for t in TARGETS if only is None or t[0] in only]
    commit = git_commit()
    runs: dict[str, list[dict]] = {method: [] for method, *_ in targets}
    results = {
        "commit": commit,
        "cpu": cpu_description(),
        "threads": args.threads,
        "torch": torch.__version__,
        "method": "fit stopped --seconds after its first progress report; fit seconds = time to that report + "
        "measured seconds per fraction x the fraction left; rounds alternate over the methods",
        "runs": runs,
    }
    for _ in range(args.repeats):
        for method, dataset, epsilon, _target in targets:
            load_before = os.getloadavg()[0]
            rate = measure(method, dataset, epsilon, "paper", (), args.seconds, threads=args.threads)
            row = {
                "first_report_s": round(rate.first_report_s, 1),
                "measured_fraction": round(rate.last_fraction - rate.first_fraction, 5),
                "fit_seconds": round(rate.fit_seconds),
                "load_before": round(load_before, 2),
                "load_after": round(os.getloadavg()[0], 2),
            }
            runs[method].append(row)
            print(method, json.dumps(row), flush=True)
            results["summary"] = {
                m: {
                    "dataset": d,
                    "epsilon": e,
                    "median_fit_seconds": statistics.median(r["fit_seconds"] for r in runs[m]) if runs[m] else None,
                    "target_seconds": t,
                }
                for m, d, e, t in targets
            }
            args.out.write_text(json.dumps(results, indent=1) + "\n")
    for method, summary in results["summary"].items():
        print(f"{method}: median {summary['median_fit_seconds']} s (target ≤ {summary['target_seconds']} s)")


if __name__ == "__main__":
    main()
