"""Wall time and peak memory of the ``downstream`` evaluator (12 classifiers), per protocol.

    python benchmarks/bench_downstream.py --dataset adult [--protocol sound|paper|both] [--data-dir DIR]
    python benchmarks/bench_downstream.py                  # no dataset: a synthetic adult-shaped table

Trains on the real training split (the tables' "Real" column) and tests on the real test split.
Each protocol runs in a fresh child process, so its peak memory is its own. Reported:

* ``wall``: seconds of ``evaluate`` alone (dataset loading excluded);
* ``peak evaluator``: peak RSS of the evaluating process (getrusage RUSAGE_SELF);
* ``peak worker``: the largest peak RSS of one classifier worker process (a separate
  interpreter, ``evaluators.fitpool``), reported by the worker itself. RUSAGE_CHILDREN would
  include the workers but is dominated by a short-lived subprocess that ``import torch`` forks
  (a forked child's peak includes the parent's pages at fork time, ≈ 450 MiB), so it is not
  shown. The memory-mapped data count in each worker's RSS but exist once in the page cache,
  so ``evaluator + jobs × worker`` is an upper bound of the total;
* the slowest fits (``<classifier>.fit_seconds``) and the main metrics.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def synthetic_split(rows: int, test_rows: int, n_classes: int, seed: int = 0):
    """An adult-shaped table: 6 numerical columns, 8 categorical ones (2 to 41 categories),
    labels from a random linear model on the one-hot encoding."""
    import numpy as np

    from bench.core.encoding import TabularEncoder
    from bench.core.data import Column, ColumnKind, LabelledData, Schema, Split

    rng = np.random.default_rng(seed)
    sizes = (9, 16, 7, 15, 6, 5, 2, 42)
    columns = tuple(Column(f"num{i}", ColumnKind.NUMERICAL, bounds=(0.0, 100.0)) for i in range(6)) + tuple(
        Column(f"cat{i}", ColumnKind.CATEGORICAL, categories=tuple(f"c{j}" for j in range(k)))
        for i, k in enumerate(sizes)
    )
    schema = Schema(columns, "label", tuple(f"class{k}" for k in range(n_classes)))
    n = rows + test_rows
    x = np.column_stack([rng.uniform(0, 100, (n, 6))] + [rng.integers(0, k, n) for k in sizes]).astype(np.float32)
    encoded = TabularEncoder(schema, "onehot").encode(x)
    logits = (encoded - encoded.mean(0)) @ rng.normal(0, 1, (encoded.shape[1], n_classes))
    y = (logits + rng.gumbel(size=logits.shape)).argmax(1)
    return Split(LabelledData(x[:rows], y[:rows], schema), LabelledData(x[rows:], y[rows:], schema))


def load_split(args: argparse.Namespace, protocol: str):
    if args.dataset is None:
        return synthetic_split(args.rows, args.test_rows, args.classes)
    from bench.api.registry import DATASETS

    data_dir = Path(args.data_dir) if args.data_dir else None
    return DATASETS.get(args.dataset).load(data_dir, seed=0, protocol=protocol)


def child(args: argparse.Namespace) -> None:
    from bench.api.contracts import EvalContext
    from evaluators.downstream import DownstreamClassifiers

    protocol = args.child
    split = load_split(args, protocol)
    evaluator = DownstreamClassifiers(n_jobs=args.jobs, timeout_s=args.timeout)
    started = time.perf_counter()
    evaluation = evaluator.evaluate(split.train, split.train, split.test, EvalContext(protocol=protocol))
    values = dict(evaluation.metrics)
    wall = time.perf_counter() - started
    report = {
        "protocol": protocol,
        "n_train": len(split.train),
        "n_test": len(split.test),
        "n_classes": split.train.schema.n_classes,
        "jobs": evaluator.resolved_jobs(),
        "wall_s": wall,
        "peak_evaluator_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "peak_worker_mib": values["worker_peak_mib"],
        "values": values,
        "errors": dict(evaluation.errors),
    }
    print("RESULT " + json.dumps(report, allow_nan=True))


def show(report: dict) -> None:
    values = report["values"]
    print(
        f"\n== protocol {report['protocol']}: {report['n_train']} train / {report['n_test']} test rows, "
        f"{report['n_classes']} classes, {report['jobs']} jobs"
    )
    print(
        f"wall {report['wall_s']:.1f} s; peak evaluator {report['peak_evaluator_mib']:.0f} MiB, "
        f"peak worker {report['peak_worker_mib']:.0f} MiB "
        f"(upper bound of the total: {report['peak_evaluator_mib'] + report['jobs'] * report['peak_worker_mib']:.0f} MiB)"
    )
    fits = sorted(((v, k.split(".")[0]) for k, v in values.items() if k.endswith("fit_seconds")), reverse=True)
    print("slowest base fits: " + ", ".join(f"{name} {seconds:.1f} s" for seconds, name in fits[:6]))
    main = [
        k
        for k in values
        if k.count(".") == 0 or (k.count(".") == 1 and k.split(".")[0] in ("paper", "test_selected_best"))
    ]
    print("metrics: " + ", ".join(f"{k} {values[k]:.4f}" for k in main))
    if report["errors"]:
        print("errors: " + "; ".join(f"{k}: {v[:100]}" for k, v in report["errors"].items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", help="registered dataset name (default: a synthetic adult-shaped table)")
    parser.add_argument("--protocol", choices=("sound", "paper", "both"), default="both")
    parser.add_argument("--data-dir", help="data folder (default: $DPBENCH_DATA_DIR or ./data)")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (default: $DPBENCH_EVAL_JOBS or 2)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per fit")
    parser.add_argument("--rows", type=int, default=11_077, help="synthetic table: training rows")
    parser.add_argument("--test-rows", type=int, default=1_231, help="synthetic table: test rows")
    parser.add_argument("--classes", type=int, default=2, help="synthetic table: number of classes")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    print(f"dataset {args.dataset or 'synthetic'}; each protocol in a fresh process")
    for protocol in ("sound", "paper") if args.protocol == "both" else (args.protocol,):
        command = [sys.executable, __file__, *sys.argv[1:], "--child", protocol]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        if done.returncode or not lines:
            print(f"\n== protocol {protocol} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
            continue
        show(json.loads(lines[-1][len("RESULT ") :]))


if __name__ == "__main__":
    main()
