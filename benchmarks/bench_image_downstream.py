"""Per-classifier fit time of ``image-downstream`` (the seeds' 12 image classifiers, DP-HP Table 10)
on real MNIST training images, at several training-set sizes.

    python benchmarks/bench_image_downstream.py                 # 6,000 and 60,000 images
    python benchmarks/bench_image_downstream.py --rows 6000     # one size
    python benchmarks/bench_image_downstream.py --quick         # 600 images, 2,000 test images: a minute
    python benchmarks/bench_image_downstream.py --classifiers LR,Ada --jobs 1
    python benchmarks/bench_image_downstream.py --versus-sklearn-ada 20   # AdaBoost, ours vs scikit-learn's

Training data: the real training images (what the ``real`` method hands the evaluator), the
whole set at 60,000, else a class-balanced subset (as ``effective-size``). Test data: the real
test images (all 10,000; 2,000 with ``--quick``). The classifiers run as in a grid cell: a pool of
``--jobs`` single-threaded worker processes (``evaluators.fitpool``). Reported per size: each
classifier's ``fit_seconds`` (fit alone, measured in its worker; concurrent fits share the cores)
and accuracy, the wall time of ``evaluate`` (fits, predictions, worker start-up), and the largest
peak RSS of a worker. ``--json FILE`` also writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def measure(args: argparse.Namespace, rows: int, train, test) -> dict:
    from bench.core.data import LabelledData
    from bench.api.contracts import EvalContext
    from evaluators.image_downstream import IMAGE_CLASSIFIERS, ImageDownstreamClassifiers, subset_rows

    chosen = args.classifiers.split(",") if args.classifiers else [spec.name for spec in IMAGE_CLASSIFIERS]
    unknown = set(chosen) - {spec.name for spec in IMAGE_CLASSIFIERS}
    if unknown:
        raise SystemExit(
            f"unknown classifiers {sorted(unknown)}; valid: {', '.join(s.name for s in IMAGE_CLASSIFIERS)}"
        )
    index = subset_rows(train.y, rows, train.schema.n_classes, seed=0)
    data = train if index is None else LabelledData(train.x[index], train.y[index], train.schema)
    evaluator = ImageDownstreamClassifiers(
        classifiers=tuple(spec for spec in IMAGE_CLASSIFIERS if spec.name in chosen),
        n_jobs=args.jobs,
        timeout_s=args.timeout,
    )
    started = time.perf_counter()
    evaluation = evaluator.evaluate(data, data, test, EvalContext())
    values = evaluation.metrics
    return {
        "n_train": len(data),
        "n_test": len(test),
        "jobs": evaluator.resolved_jobs(),
        "wall_s": time.perf_counter() - started,
        "peak_worker_mib": values["worker_peak_mib"],
        "fit_seconds": {name: values[f"{name}.fit_seconds"] for name in chosen},
        "accuracy": {name: values[f"{name}.accuracy"] for name in chosen},
        "mean_accuracy": values["accuracy"],
        "errors": dict(evaluation.errors),
    }


def versus_sklearn_ada(rounds: int, train, repeats: int = 3) -> dict:
    """``rounds`` rounds of Table 10's AdaBoost on all training images, scikit-learn's and ours
    (evaluators/stump_boost.py) alternating, one thread each: the same stumps, so the same work."""
    from sklearn.ensemble import AdaBoostClassifier
    from threadpoolctl import threadpool_limits

    from evaluators.stump_boost import SammeStumpBoost

    seconds: dict[str, list[float]] = {"scikit-learn": [], "histograms": []}
    with threadpool_limits(1):
        for _ in range(repeats):
            for name, make in (("scikit-learn", AdaBoostClassifier), ("histograms", SammeStumpBoost)):
                started = time.perf_counter()
                make(n_estimators=rounds, learning_rate=0.7, random_state=0).fit(train.x, train.y)
                seconds[name].append(time.perf_counter() - started)
    medians = {name: sorted(values)[len(values) // 2] for name, values in seconds.items()}
    print(
        f"AdaBoost, {rounds} rounds on {len(train)} images, median of {repeats}: scikit-learn {medians['scikit-learn']:.1f} s, "
        f"histograms {medians['histograms']:.1f} s ({medians['scikit-learn'] / medians['histograms']:.1f}× faster)"
    )
    return {"rounds": rounds, "n_train": len(train), "seconds": seconds, "median_s": medians}


def narrow_versus_full(sizes: list[int], train, repeats: int = 3) -> dict:
    """Table 10's AdaBoost (1,000 rounds) on effective-size's small training sets, the histograms
    over the splittable columns and present levels against all 784 columns at 256 levels (the same
    stumps: tests/test_stump_boost.py), alternating, one thread each."""
    from threadpoolctl import threadpool_limits

    from evaluators import stump_boost

    narrow_shape = stump_boost.histogram_shape

    def full_shape(levels, boundaries):
        return np.arange(len(levels)), stump_boost.MAX_LEVELS

    seconds: dict[str, dict[str, list[float]]] = {}
    with threadpool_limits(1):
        for size in sizes:
            timed = seconds.setdefault(str(size), {"full": [], "narrow": []})
            for _ in range(repeats):
                for name, shape in (("full", full_shape), ("narrow", narrow_shape)):
                    stump_boost.histogram_shape = shape
                    started = time.perf_counter()
                    stump_boost.SammeStumpBoost(n_estimators=1000, learning_rate=0.7).fit(
                        train.x[:size], train.y[:size]
                    )
                    timed[name].append(time.perf_counter() - started)
            stump_boost.histogram_shape = narrow_shape
            medians = {name: sorted(values)[len(values) // 2] for name, values in timed.items()}
            print(
                f"AdaBoost, 1,000 rounds on {size} images, median of {repeats}: all columns × 256 levels "
                f"{medians['full']:.1f} s, splittable columns × present levels {medians['narrow']:.1f} s "
                f"({medians['full'] / medians['narrow']:.1f}×)",
                flush=True,
            )
    return {"sizes": sizes, "seconds": seconds}


def show(report: dict) -> None:
    print(
        f"\n== {report['n_train']} training images, {report['n_test']} test images, {report['jobs']} jobs: "
        f"wall {report['wall_s']:.1f} s, peak worker {report['peak_worker_mib']:.0f} MiB, "
        f"mean accuracy {report['mean_accuracy']:.4f}"
    )
    print(f"{'classifier':<10} {'fit s':>9} {'accuracy':>9}")
    for name, seconds in sorted(report["fit_seconds"].items(), key=lambda item: -item[1] if item[1] == item[1] else 0):
        print(f"{name:<10} {seconds:>9.2f} {report['accuracy'][name]:>9.4f}")
    print(f"{'sum':<10} {sum(s for s in report['fit_seconds'].values() if s == s):>9.1f}")
    for name, error in report["errors"].items():
        print(f"error {name}: {error[:200]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="6000,60000", help="comma-separated training-set sizes")
    parser.add_argument("--quick", action="store_true", help="600 training and 2,000 test images")
    parser.add_argument("--dataset", default="mnist", help="an image dataset (default mnist)")
    parser.add_argument("--data-dir", help="data folder (default: $DPBENCH_DATA_DIR or ./data)")
    parser.add_argument("--classifiers", help="comma-separated short names (default: all 12)")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (default: $DPBENCH_EVAL_JOBS or 2)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per fit")
    parser.add_argument("--json", type=Path, help="also write the reports to this file")
    parser.add_argument(
        "--versus-sklearn-ada",
        type=int,
        metavar="ROUNDS",
        help="instead: time ROUNDS rounds of AdaBoost, scikit-learn's against ours, on the full training set",
    )
    parser.add_argument(
        "--narrow-vs-full",
        metavar="SIZES",
        help="instead: time AdaBoost at these training-set sizes (e.g. 60,600,6000), the narrowed histograms "
        "against all columns at 256 levels",
    )
    args = parser.parse_args()

    from bench.core.data import LabelledData
    from bench.api.registry import DATASETS

    split = DATASETS.get(args.dataset).load(Path(args.data_dir) if args.data_dir else None, seed=0)
    test = split.test
    if args.narrow_vs_full:
        report = narrow_versus_full([int(size) for size in args.narrow_vs_full.split(",")], split.train)
        if args.json:
            args.json.write_text(json.dumps(report, indent=2))
        return
    if args.versus_sklearn_ada:
        report = versus_sklearn_ada(args.versus_sklearn_ada, split.train)
        if args.json:
            args.json.write_text(json.dumps(report, indent=2))
        return
    sizes = [600] if args.quick else [int(size) for size in args.rows.split(",")]
    if args.quick:
        test = LabelledData(test.x[:2000], test.y[:2000], test.schema)
    reports = []
    for rows in sizes:
        report = measure(args, rows, split.train, test)
        show(report)
        reports.append(report)
        if args.json:
            args.json.write_text(json.dumps(reports, indent=2, allow_nan=True))


if __name__ == "__main__":
    main()
