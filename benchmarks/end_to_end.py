"""One seed of a method on a dataset end to end, in this process, as one grid cell does:
load → fit (paper hyperparameters, ε = 1) → sample n_train rows → every evaluator a cell runs by default.
Reports each phase's wall time and the peak memory.

    python benchmarks/end_to_end.py dp-hp adult --protocol paper [--threads 2] [--set epochs=5]
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import torch


def end_to_end(
    method_name: str, dataset_name: str, protocol: str, data_dir: str | None, overrides: dict[str, str] | None = None
) -> dict[str, float]:
    from bench.privacy.budget import PrivacyBudget
    from bench.api.contracts import EvalContext, FitContext
    from bench.privacy.ledger import PrivacyLedger
    from bench.privacy.private_data import PrivateData
    from bench.api.registry import DATASETS, EVALUATORS, METHODS

    torch.manual_seed(0)
    dataset, method = DATASETS.get(dataset_name), METHODS.get(method_name)
    timings = {}
    started = time.perf_counter()
    split = dataset.load(Path(data_dir) if data_dir else None, 0, protocol)
    timings["load"] = time.perf_counter() - started
    budget = PrivacyBudget(1.0, 1e-5)
    params = method.hyperparameters.resolve(dataset_name, overrides=overrides or {}).params
    ledger = PrivacyLedger(budget)
    context = FitContext(budget, ledger, params, 0, torch.device("cpu"), protocol, dataset.kind)
    started = time.perf_counter()
    fitted = method.fit(PrivateData(split.train, ledger), context)
    timings["fit"] = time.perf_counter() - started
    started = time.perf_counter()
    synthetic = fitted.sample(len(split.train))
    timings["sample"] = time.perf_counter() - started
    for evaluator in EVALUATORS:
        runs_by_default = getattr(evaluator, "run_by_default", True)  # as a cell with no --evaluators
        if runs_by_default and dataset.kind in evaluator.data_kinds and evaluator.applies_to(dataset.schema):
            started = time.perf_counter()
            evaluator.evaluate(synthetic, split.train, split.test, EvalContext(seed=0, device="cpu", protocol=protocol))
            timings[f"evaluate {evaluator.name}"] = time.perf_counter() - started
    print(
        f"{method_name} on {dataset_name} ({protocol} protocol, n_train = {len(split.train)}, seed 0, ε = 1, "
        f"{torch.get_num_threads()} torch threads)"
    )
    for phase, seconds in timings.items():
        print(f"  {phase:<22} {seconds:8.1f} s")
    total = sum(v for k, v in timings.items() if k != "load")
    print(f"  {'fit + sample + eval':<22} {total:8.1f} s")
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(
        f"  peak memory            {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:8.0f} MiB"
        f" (largest child process {children:.0f} MiB)"
    )
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("method")
    parser.add_argument("dataset")
    parser.add_argument("--protocol", default="sound", choices=("sound", "paper"))
    parser.add_argument("--data-dir", help="default: $DPBENCH_DATA_DIR")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    parser.add_argument("--set", action="append", default=[], metavar="PARAM=VALUE", help="override a hyperparameter")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    overrides = dict(item.split("=", 1) for item in args.set)
    end_to_end(args.method, args.dataset, args.protocol, args.data_dir, overrides)


if __name__ == "__main__":
    main()
