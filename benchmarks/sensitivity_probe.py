"""How far each built-in's releases move between replace-one neighbours, as a share of the declared
sensitivity: the conformance kit's ``sensitivity_probe`` (bench/testing.py), printed per release.

    python benchmarks/sensitivity_probe.py [METHOD ...]      # default: every private built-in

Each method is fitted on the first 3,000 rows of the kit's test dataset of each kind it supports
(smoke profile, the registry-wide test's fast settings), then on the adversarial neighbour (row 0
moved to the far end of every public domain, another label) with the ledger handing back the first
fit's noisy values, so both fits follow one trajectory and their clean values can be compared. A
ratio above 1 would prove the declared sensitivity understated; 1.0 means the bound is reached.
"""

from __future__ import annotations

import sys

from bench.api.registry import DATASETS, METHODS
from bench.testing.kit import ROWS, TEST_DATASETS, head_rows
from bench.testing.method import Subject
from bench.testing.neighbours import clean_distance

FAST = {
    "dp-merf": {"epochs": "1"},
    "dp-hp": {"epochs": "1"},
    "dp-gan": {"batch_size": "3000"},
    "dp-cgan": {"batch_size": "3000"},
}


def main(names: list[str]) -> None:
    chosen = names or [
        m.name
        for m in METHODS
        if m.private and not getattr(m, "data_independent", False) and m.__module__.startswith("methods.")
    ]
    for name in chosen:
        method = METHODS.get(name)
        for kind in sorted(method.data_kinds, key=lambda k: k.value):
            dataset = TEST_DATASETS.get(kind)
            if dataset is None:
                continue
            subject = Subject(method, dataset, head_rows(DATASETS.get(dataset).load(None, 0), ROWS), FAST.get(name))
            probe = subject.replayed_on(subject.neighbour)
            ratios = [clean_distance(a, b) / a.release.sensitivity for a, b in zip(subject.first.events, probe.events)]
            print(
                f"{name:12s} {dataset:15s} releases {len(ratios):3d}  largest move / declared sensitivity "
                f"{max(ratios, default=0):.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main(sys.argv[1:])
