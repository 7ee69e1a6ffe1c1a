"""Every registered method runs on a small dataset of every kind it supports, through the same
cell execution as the grid, and every applicable evaluator scores it."""

from __future__ import annotations

import json

import pytest

from bench.grid import GridSpec, expand
from bench.interfaces import DataKind
from bench.registry import DATASETS, EVALUATORS, METHODS
from bench.worker import execute

SMALL_DATASET = {DataKind.TWO_D: "gmm2d", DataKind.TABULAR: "cervical", DataKind.DISCRETE: "adult-discrete"}
FAST = {
    "dp-merf": {"epochs": "1"},
    "dp-hp": {"epochs": "1"},
    "dp-gan": {"batch_size": "3000"},
    "dp-cgan": {"batch_size": "3000"},
}
BUILTIN_METHODS = [m.name for m in METHODS if m.__module__.startswith("methods.")]
CASES = [
    (method, SMALL_DATASET[kind], protocol)
    for method in BUILTIN_METHODS
    for kind in sorted(METHODS.get(method).data_kinds, key=lambda k: k.value)
    if kind in SMALL_DATASET
    for protocol in (("sound", "paper") if kind == DataKind.TABULAR else ("sound",))
]


def test_every_evaluator_applies_somewhere():
    # No image dataset is small enough for this grid-wide run; fid is tested in test_images.py.
    kinds = {DATASETS.get(name).kind for name in SMALL_DATASET.values()} | {DataKind.IMAGE}
    assert all(e.data_kinds & kinds for e in EVALUATORS)


@pytest.mark.parametrize("method,dataset,protocol", CASES)
def test_method_runs_and_is_evaluated(tmp_path, method, dataset, protocol):
    spec = GridSpec(
        methods=[method], datasets=[dataset], epsilons=[1.0], seeds=[0], profile="smoke",
        protocol=protocol, overrides={k: v for k, v in FAST.items() if k == method},
    )
    (cell,), _ = expand(spec)
    outcome = execute(cell.to_dict(), str(tmp_path), lambda fraction: None)
    assert outcome.status == "FINISHED", outcome.error
    for name in cell.evaluators:
        evaluator = EVALUATORS.get(name)
        assert any(key.startswith(f"{name}.") for key in outcome.metrics), f"{name} logged nothing"
        assert evaluator.data_kinds  # declared
    ledger = json.loads((tmp_path / "ledger.json").read_text())
    if METHODS.get(method).private:
        assert ledger["spent"]["epsilon"] <= 1.0 * (1 + 1e-9)
        assert ledger["releases"], "a private method must record its releases"
    if protocol == "paper":
        assert ledger["caveats"], "paper-protocol preprocessing must be stated in the ledger"
