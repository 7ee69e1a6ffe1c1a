"""Lower bounds on what an untimed image cell costs on CPU: its fit's measured rate, extrapolated.

    python benchmarks/image_cell_costs.py [--seconds 90] [--only dp-gan:mnist,...] [--out FILE]

For each image setup the coverage matrix showed as "not timed" (the keys of ``SETUPS``), runs the
cell's real fit — the preset's method, dataset, ε, profile and ``--set`` values, seed 0, one thread
— through the grid's worker, records the fit's progress reports (fraction of its steps, time) and
stops it ``--seconds`` after the first report. The fit's cost is then the time to the first report
(loading, the release, any encoder work) plus the measured seconds per step times the steps left.
Evaluation (12 classifiers, FID, effective size) is not counted, so the figure is a lower bound on
the cell: ``bench/report/presets.py`` reads the written file as ``≥`` costs keyed by
(method, dataset, profile). ``real`` has no fit: its cell is the evaluation of the real training
images, bounded below by the wall time of the cheapest classifiers of ``image-downstream``
(``REAL_CLASSIFIERS``, fitted as in a cell on all 60,000 images; every image evaluator of the
presets fits at least these at that size). Run from a clean tree: each row names its commit.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from bench.harness.provenance import git_commit

# (method, dataset, ε, profile, --set values): the image setups of the presets with no timed cell
SETUPS = (
    ("full-mmd", "mnist", float("inf"), "paper", ()),
    ("full-mmd", "fashion-mnist", float("inf"), "paper", ()),
    ("dp-gan", "mnist", 9.6, "paper", ()),
    ("dp-gan", "fashion-mnist", 9.6, "paper", ()),
    ("dp-cgan", "mnist", 9.6, "paper", ()),
    ("dp-cgan", "fashion-mnist", 9.6, "paper", ()),
    ("dp-merf", "fashion-mnist", 1.0, "paper", ()),
    ("dp-hp", "fashion-mnist", 1.0, "paper", ()),
    ("dp-mepf", "cifar10-jpeg", 10.0, "cpu", ("labelled=false",)),
)
REAL_SETUPS = ("mnist", "fashion-mnist")
# the eight that finished in docs/performance.md's 60,000-image MNIST run (290 s at 2 jobs; GBM, MLP,
# LinearSVC and AdaBoost take longer): five of them gave a bound of 54 s, too weak to plan by
REAL_CLASSIFIERS = ("GNB", "BNB", "LDA", "DT", "LR", "Bag", "RF", "XGB")
OUT = (
    Path(__file__).resolve().parents[1] / "docs" / "measurements" / f"image_cell_costs_{time.strftime('%Y-%m-%d')}.json"
)


class _Enough(Exception):
    """Raised from the progress report to stop a fit once its rate is measured."""


@dataclass
class FitRate:
    first_report_s: float  # from the start of the cell to the fit's first progress report
    first_fraction: float
    last_fraction: float
    measured_s: float  # between the first and the last report

    @property
    def fit_seconds(self) -> float:
        per_fraction = self.measured_s / (self.last_fraction - self.first_fraction)
        return self.first_report_s + per_fraction * (1.0 - self.first_fraction)


def measure(
    method: str, dataset: str, epsilon: float, profile: str, sets: tuple[str, ...], seconds: float, threads: int = 1
) -> FitRate:
    from bench.harness.grid import GridSpec, expand
    from bench.harness.worker import execute

    overrides = {method: dict(s.split("=", 1) for s in sets)} if sets else {}
    spec = GridSpec(
        methods=[method],
        datasets=[dataset],
        epsilons=[epsilon],
        seeds=[0],
        profile=profile,
        overrides=overrides,
        device="cpu",
        evaluators=[],
        threads=threads,
    )
    (cell,), _ = expand(spec)
    cell = dataclasses.replace(cell, evaluators=(), evaluator_settings={})
    reports: list[tuple[float, float]] = []
    started = time.perf_counter()

    def report(fraction: float) -> None:
        now = time.perf_counter() - started
        if not reports or fraction > reports[-1][1]:
            reports.append((now, fraction))
        if now - reports[0][0] >= seconds and len(reports) >= 2:
            raise _Enough

    with tempfile.TemporaryDirectory() as folder:
        outcome = execute(cell.to_json(), folder, report)
    if len(reports) < 2:
        raise SystemExit(f"{method}/{dataset}: fewer than two progress reports ({outcome.status}: {outcome.error})")
    (t0, f0), (t1, f1) = reports[0], reports[-1]
    return FitRate(t0, f0, f1, t1 - t0)


def real_evaluation_seconds(dataset: str, jobs: int) -> float:
    """Wall seconds of ``REAL_CLASSIFIERS`` trained on the dataset's real training images and
    tested on its test images, as in a ``real`` cell's ``image-downstream``."""
    from bench.api.contracts import EvalContext
    from bench.api.registry import DATASETS
    from evaluators.image_downstream import IMAGE_CLASSIFIERS, ImageDownstreamClassifiers

    split = DATASETS.get(dataset).load(None, seed=0)
    evaluator = ImageDownstreamClassifiers(
        classifiers=tuple(spec for spec in IMAGE_CLASSIFIERS if spec.name in REAL_CLASSIFIERS), n_jobs=jobs
    )
    started = time.perf_counter()
    evaluation = evaluator.evaluate(split.train, split.train, split.test, EvalContext())
    if evaluation.errors:
        raise SystemExit(f"real/{dataset}: {dict(evaluation.errors)}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=90.0, help="fit time measured after the first report")
    parser.add_argument("--only", help="comma-separated method:dataset keys of SETUPS (real:DATASET for REAL_SETUPS)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--jobs", type=int, default=1, help="classifier worker processes for real's evaluation")
    args = parser.parse_args()
    torch.set_num_threads(1)
    from bench.harness.worker import cpu_description

    only = set(args.only.split(",")) if args.only else None
    commit = git_commit()
    results = json.loads(args.out.read_text()) if args.out.exists() else {"setups": []}
    for row in results["setups"]:  # rows written before each row named its own commit
        row.setdefault("commit", results.get("commit"))
    results.pop("commit", None)
    results.update(
        cpu=cpu_description(),
        threads=1,
        torch=torch.__version__,
        method="fit stopped --seconds after its first progress report; fit seconds = time to that "
        "report + measured seconds per fraction × the fraction left; evaluation not counted, "
        "except for real (no fit): evaluation seconds = wall time of REAL_CLASSIFIERS",
    )

    def record(row: dict) -> None:
        row["commit"] = commit
        print(json.dumps(row), flush=True)
        key = (row["method"], row["dataset"], row["profile"])
        results["setups"] = [r for r in results["setups"] if (r["method"], r["dataset"], r["profile"]) != key]
        results["setups"].append(row)
        args.out.write_text(json.dumps(results, indent=1) + "\n")

    for method, dataset, epsilon, profile, sets in SETUPS:
        if only and f"{method}:{dataset}" not in only:
            continue
        rate = measure(method, dataset, epsilon, profile, sets, args.seconds)
        row = {
            "method": method,
            "dataset": dataset,
            "epsilon": str(epsilon),
            "profile": profile,
            "sets": list(sets),
            "first_report_s": round(rate.first_report_s, 1),
            "measured_fraction": round(rate.last_fraction - rate.first_fraction, 5),
            "measured_s": round(rate.measured_s, 1),
            "fit_seconds": round(rate.fit_seconds),
        }
        record(row)
    for dataset in REAL_SETUPS:
        if only and f"real:{dataset}" not in only:
            continue
        seconds = real_evaluation_seconds(dataset, args.jobs)
        record(
            {
                "method": "real",
                "dataset": dataset,
                "epsilon": "inf",
                "profile": "paper",
                "sets": [],
                "classifiers_timed": list(REAL_CLASSIFIERS),
                "jobs": args.jobs,
                "evaluation_seconds": round(seconds),
            }
        )


if __name__ == "__main__":
    main()
