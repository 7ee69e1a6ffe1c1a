"""Seconds per training step along one fit, by tenths of the training: finds a slowdown that sets
in late (a whole fit's mean hides it) and shows where cold compilation falls.

    python benchmarks/step_profile.py dp-merf gmm2d [--threads 2] [--protocol sound] [--set epochs=5]

Times the fit's ``progress`` callback (one call a step for the generator-training methods) at
ε = 1, seed 0, the paper profile. Pin ``--threads`` to the idle cores: a second thread on a core
another program keeps busy slows DP-MERF's fit ≈ 30× (docs/performance.md)."""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch


def step_marks(method: str, dataset: str, protocol: str, overrides: dict[str, str]) -> tuple[float, np.ndarray]:
    """(whole fit's seconds, [(steps done, seconds since the fit started)] one row per callback)."""
    from bench.api.contracts import FitContext
    from bench.api.registry import DATASETS, METHODS
    from bench.privacy.budget import PrivacyBudget
    from bench.privacy.ledger import PrivacyLedger
    from bench.privacy.private_data import PrivateData

    torch.manual_seed(0)
    data, card = DATASETS.get(dataset), METHODS.get(method)
    train = data.load(None, 0, protocol).train
    params = card.hyperparameters.resolve(dataset, "paper", overrides).params
    budget = PrivacyBudget(1.0, 1e-5)
    ledger = PrivacyLedger(budget)
    marks: list[tuple[int, float]] = []
    started = time.perf_counter()
    context = FitContext(
        budget,
        ledger,
        params,
        0,
        torch.device("cpu"),
        protocol,
        data.kind,
        progress=lambda done, total: marks.append((done, time.perf_counter() - started)),
    )
    card.fit(PrivateData(train, ledger), context)
    return time.perf_counter() - started, np.array(marks, dtype=float)


def per_tenth(marks: np.ndarray) -> list[float]:
    """Mean milliseconds a step in each tenth of the steps (NaN for a tenth with < 2 marks)."""
    last = marks[-1, 0]
    out = []
    for tenth in range(10):
        inside = marks[(marks[:, 0] >= tenth * last / 10) & (marks[:, 0] <= (tenth + 1) * last / 10)]
        steps = inside[-1, 0] - inside[0, 0] if len(inside) > 1 else 0
        out.append(1000 * (inside[-1, 1] - inside[0, 1]) / steps if steps else float("nan"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("method")
    parser.add_argument("dataset")
    parser.add_argument("--protocol", default="sound", choices=("sound", "paper"))
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--set", action="append", default=[], metavar="PARAM=VALUE", help="override a hyperparameter")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    seconds, marks = step_marks(args.method, args.dataset, args.protocol, dict(item.split("=", 1) for item in args.set))
    if len(marks) < 2:
        raise SystemExit(f"{args.method} reported {len(marks)} progress mark(s): nothing to split into tenths")
    print(
        f"{args.method} on {args.dataset}: fit {seconds:.1f} s, {int(marks[-1, 0])} steps, "
        f"first step after {marks[0, 1]:.1f} s, {args.threads} thread(s)"
    )
    for tenth, ms in enumerate(per_tenth(marks)):
        print(f"  tenth {tenth + 1:>2}: {ms:7.2f} ms a step")


if __name__ == "__main__":
    main()
