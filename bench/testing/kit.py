"""What the conformance kits share: a small test dataset of each kind and the row counts they
take, the error and report types, the head of a split, and the kit's runs through the harness (one
grid cell, one audit)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.api.registry import DATASETS
from bench.core.data import DataError, DataKind, LabelledData, Split
from bench.harness.api import run_cell

# A small dataset of each kind (their rows cap the cost: the checks fit each method several times).
TEST_DATASETS: dict[DataKind, str] = {
    DataKind.TWO_D: "gmm2d",
    DataKind.TABULAR: "cervical",
    DataKind.DISCRETE: "adult-discrete",
    DataKind.IMAGE: "mnist",
}
ROWS = 3000
IMAGE_ROWS = 300  # images cost the most a fit; enough for every class and the probes
SAMPLE = 200
EPSILON = 1.0


class ConformanceError(AssertionError):
    pass


@dataclass
class ConformanceReport:
    passed: list[str] = field(default_factory=list)  # datasets on which every check passed
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checks: dict[str, list[str]] = field(default_factory=dict)  # dataset → the checks it passed


def test_splits(adapter, data_dir, datasets, report: ConformanceReport) -> dict[str, Split]:
    """The whole split of the test dataset of each kind the method declares."""
    splits = {}
    for kind in sorted(adapter.data_kinds, key=lambda k: k.value):
        dataset = (datasets or TEST_DATASETS).get(kind)
        if dataset is None:
            report.skipped.append(f"{kind.value}: no test dataset (pass datasets={{DataKind.{kind.name}: NAME}})")
            continue
        try:
            splits[dataset] = DATASETS.get(dataset).load(Path(data_dir) if data_dir else None, 0)
        except DataError as error:
            report.skipped.append(f"{kind.value} ({dataset}): {error}")
    if not splits:
        raise ConformanceError(f"{adapter.name!r}: no test dataset could be loaded: {'; '.join(report.skipped)}")
    return splits


def dataset_kind(dataset: str) -> DataKind:
    return DATASETS.get(dataset).kind


def head_rows(split: Split, rows: int) -> Split:
    head = slice(0, rows)
    return Split(
        LabelledData(split.train.x[head], split.train.y[head], split.train.schema),
        LabelledData(split.test.x[head], split.test.y[head], split.test.schema),
        split.caveats,
    )


def cell_problems(adapter: Any, dataset: str, data_dir, overrides) -> list[str]:
    result = run_cell(
        adapter.name, dataset, epsilon=EPSILON, evaluators=(), profile="smoke", overrides=overrides, data_dir=data_dir
    )
    if not result.ok:
        return [f"the grid's worker failed the cell: {result.error}"]
    spent = (result.ledger or {}).get("spent", {}).get("epsilon", math.inf)
    if adapter.private and spent > EPSILON * (1 + 1e-9):
        return [f"spent ε = {spent:.4g} > the target {EPSILON}"]
    return []


def audit_problems(adapter: Any, dataset: str, data_dir, overrides, runs: int) -> list[str]:
    from bench.harness.auditing import AuditTarget, audit_method

    data = Path(data_dir) if data_dir else None
    target = AuditTarget(adapter.name, dataset, 4.0, 0.05, runs, rows=100, data_dir=data, overrides=overrides or {})
    result = audit_method(target, candidates=4)
    return [result.summary()] if result.violated else []
