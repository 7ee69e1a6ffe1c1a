"""The conformance kit: ``check_method(adapter)`` runs a method adapter through the checks every
method must pass (like scikit-learn's ``check_estimator``). The registry-wide test calls it for
every built-in; a plugin author calls it in their own tests::

    from bench.testing import check_method
    check_method(MyMethod(), data_dir="path/to/data")

A check that fails raises :class:`ConformanceError` listing every failure; a kind whose test
dataset cannot be loaded (files missing) is skipped and named in the returned report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from bench.core.contracts import DataError, DataKind, FitContext, LabelledData, Split
from bench.core.registry import DATASETS, METHODS
from bench.harness.api import run_cell
from bench.privacy.budget import PrivacyBudget
from bench.privacy.ledger import PrivacyLedger, ReleaseEvent
from bench.privacy.releases import GaussianRelease

# A small dataset of each kind (their rows cap the cost: the checks fit each method several times).
TEST_DATASETS: dict[DataKind, str] = {DataKind.TWO_D: "gmm2d", DataKind.TABULAR: "cervical", DataKind.DISCRETE: "adult-discrete"}
ROWS = 3000
SAMPLE = 200
EPSILON = 1.0


class ConformanceError(AssertionError):
    pass


@dataclass
class ConformanceReport:
    passed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class _ZeroNoise:
    """A noise source that draws zeros: every Gaussian or Laplace release must then equal its clean value."""

    def standard_normal(self, shape):
        return np.zeros(shape)

    def laplace(self, loc, scale, shape):
        return np.zeros(shape)

    def random(self, size):
        return np.full(size, 0.5)


def check_method(
    adapter: Any,
    *,
    data_dir: str | Path | None = None,
    datasets: Mapping[DataKind, str] | None = None,
    overrides: Mapping[str, str] | None = None,
) -> ConformanceReport:
    """Check the declaration; run one cell through the grid's worker (fit, the independent
    accountant's check of the ledger, sampling in the training schema) on the smallest test
    dataset the method supports; then, on the first rows of a test dataset of each supported kind
    (``smoke`` profile, ``overrides`` as ``--set`` values): the same seed gives the same
    synthetic data; ε = ∞ fits and charges nothing; a private method records its releases,
    stays within ε, and the noise of its Gaussian and Laplace releases is the only noise the
    ledger does not see the clean value of — zero noise through the ledger gives the clean values,
    and two ledger noise streams give two different outputs."""
    problems = _declaration_problems(adapter)
    if problems:
        raise ConformanceError(f"{getattr(adapter, 'name', adapter)!r}: " + "; ".join(problems))
    report = ConformanceReport()
    registered = adapter.name not in METHODS
    if registered:
        METHODS.register(adapter)
    try:
        splits, full_rows = {}, {}
        for kind in sorted(adapter.data_kinds, key=lambda k: k.value):
            dataset = (datasets or TEST_DATASETS).get(kind)
            if dataset is None:
                report.skipped.append(f"{kind.value}: no test dataset (pass datasets={{DataKind.{kind.name}: NAME}})")
                continue
            try:
                split = DATASETS.get(dataset).load(Path(data_dir) if data_dir else None, 0)
            except DataError as error:
                report.skipped.append(f"{kind.value} ({dataset}): {error}")
                continue
            splits[dataset], full_rows[dataset] = _head(split), len(split.train)
        if not splits:
            raise ConformanceError(f"{adapter.name!r}: no test dataset could be loaded: {'; '.join(report.skipped)}")
        smallest = min(full_rows, key=full_rows.get)
        problems += [f"{smallest}: {p}" for p in _cell_problems(adapter, smallest, data_dir, overrides)]
        for dataset, split in splits.items():
            try:
                found = _fit_problems(adapter, dataset, split, overrides, report.notes)
            except Exception as error:  # a check that cannot run is a failure to report, with its cause
                found = [f"fitting raised {type(error).__name__}: {error}"]
            problems += [f"{dataset}: {p}" for p in found]
            if not found:
                report.passed.append(dataset)
    finally:
        if registered:
            METHODS.unregister(adapter.name)
    if problems:
        raise ConformanceError(f"{adapter.name!r} fails conformance: " + "; ".join(problems))
    return report


def _declaration_problems(adapter: Any) -> list[str]:
    problems = []
    if not isinstance(getattr(adapter, "name", None), str) or not adapter.name:
        problems.append("needs a non-empty string attribute 'name'")
    kinds = getattr(adapter, "data_kinds", None)
    if not kinds or not all(isinstance(k, DataKind) for k in kinds):
        problems.append("data_kinds must be a non-empty set of bench.core.contracts.DataKind")
    if not isinstance(getattr(adapter, "private", None), bool):
        problems.append("needs a boolean attribute 'private'")
    if not callable(getattr(getattr(adapter, "hyperparameters", None), "resolve", None)):
        problems.append("hyperparameters must be a bench.core.params.HyperParameters")
    if not callable(getattr(adapter, "fit", None)):
        problems.append("needs a method fit(train, context)")
    return problems


def _head(split: Split) -> Split:
    rows = slice(0, ROWS)
    return Split(
        LabelledData(split.train.x[rows], split.train.y[rows], split.train.schema),
        LabelledData(split.test.x[rows], split.test.y[rows], split.test.schema),
        split.caveats,
    )


def _cell_problems(adapter: Any, dataset: str, data_dir, overrides) -> list[str]:
    result = run_cell(adapter.name, dataset, epsilon=EPSILON, evaluators=(), profile="smoke",
                      overrides=overrides, data_dir=data_dir)
    if not result.ok:
        return [f"the grid's worker failed the cell: {result.error}"]
    problems = []
    if adapter.private:
        spent = (result.ledger or {}).get("spent", {}).get("epsilon", math.inf)
        if spent > EPSILON * (1 + 1e-9):
            problems.append(f"spent ε = {spent:.4g} > the target {EPSILON}")
    return problems


def _fit_problems(adapter: Any, dataset: str, split: Split, overrides, notes: list[str]) -> list[str]:
    problems = []
    first, events = _fit(adapter, dataset, split, overrides, EPSILON, None)
    again, _ = _fit(adapter, dataset, split, overrides, EPSILON, None)
    if not (np.array_equal(first.x, again.x) and np.array_equal(first.y, again.y)):
        problems.append("the same seed gave different synthetic data (draw randomness from the context's seed)")
    if first.schema != split.train.schema or len(first) != SAMPLE:
        problems.append("sample(n) must return n rows in the training data's schema")
    if adapter.private:
        try:
            _, infinite = _fit(adapter, dataset, split, overrides, math.inf, None)
            if any(_is_additive(e) and not _close(e.clean, e.noisy) for e in infinite):
                problems.append("the ε = ∞ fit added noise")
        except ValueError as refusal:  # a method planned from a finite budget may refuse ε = ∞, saying so
            notes.append(f"{dataset}: refuses ε = ∞ ({refusal})")
        if not getattr(adapter, "data_independent", False):
            problems += _noise_door_problems(adapter, dataset, split, overrides, events)
    return problems


def _noise_door_problems(adapter: Any, dataset: str, split: Split, overrides, events: list[ReleaseEvent]) -> list[str]:
    """Fit again with the ledger's noise replaced: zeros, then two different streams."""
    if not events:
        return ["private, but recorded no release through the ledger (gaussian, laplace, exponential, subsampled_phase)"]
    _, zero_events = _fit(adapter, dataset, split, overrides, EPSILON, _ZeroNoise())
    problems = [
        f"release {event.release.what!r} differs from its clean value under zero noise"
        for event in zero_events
        if _is_additive(event) and not _close(event.clean, event.noisy)
    ]
    # two replacement streams (not the method's own generator against one: a method that adds its
    # own noise from its own generator would then differ too, and pass)
    one, _ = _fit(adapter, dataset, split, overrides, EPSILON, np.random.default_rng(1))
    two, _ = _fit(adapter, dataset, split, overrides, EPSILON, np.random.default_rng(2))
    if np.array_equal(one.x, two.x) and np.array_equal(one.y, two.y):
        problems.append("two ledger noise streams gave the same synthetic data: the released noise does not reach the output")
    return problems


def _fit(adapter, dataset: str, split: Split, overrides, epsilon: float, noise_source) -> tuple[LabelledData, list[ReleaseEvent]]:
    """Fit on ``split`` as the worker would (seed 0, CPU, smoke profile) and sample SAMPLE rows."""
    import torch

    from bench.harness.worker import seed_everything

    seed_everything(0)
    private = math.isfinite(epsilon)
    resolved = adapter.hyperparameters.resolve(dataset, "smoke", overrides, private=private)
    budget = PrivacyBudget(epsilon, 1e-5) if private else PrivacyBudget.non_private()
    events: list[ReleaseEvent] = []
    ledger = PrivacyLedger(budget, noise_source=noise_source, observers=[events.append])
    context = FitContext(budget=budget, ledger=ledger, params=resolved.params, seed=0, device=torch.device("cpu"),
                         data_kind=DATASETS.get(dataset).kind)
    return adapter.fit(split.train, context).sample(SAMPLE), events


def _is_additive(event: ReleaseEvent) -> bool:
    """Gaussian (incl. DP-SGD steps) and Laplace releases add noise to a clean value."""
    return isinstance(event.release, GaussianRelease) or getattr(event.release, "mechanism", "") == "laplace"


def _close(clean: Any, noisy: Any) -> bool:
    pairs = zip(clean, noisy) if isinstance(clean, (list, tuple)) else [(clean, noisy)]
    return all(np.allclose(_numpy(a), _numpy(b), rtol=1e-6, atol=1e-9) for a, b in pairs)


def _numpy(value: Any) -> np.ndarray:
    return value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)


__all__ = ["check_method", "ConformanceError", "ConformanceReport", "TEST_DATASETS"]
