"""The conformance kit (bench.testing.check_method) passes a sound method and catches broken ones:
noise drawn outside the ledger, a release that never reaches the output, randomness that ignores
the seed, an overspent budget."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

import numpy as np
import pytest

from bench.core.contracts import DataKind, LabelledData
from bench.core.params import HyperParameters, NoParameters
from bench.privacy.releases import COUNT_L1_SENSITIVITY
from bench.testing import ConformanceError, check_method

DATA_DIR = os.environ.get("DPBENCH_DATA_DIR")
ONLY_DISCRETE = {DataKind.DISCRETE: "adult-discrete"}


@dataclass
class HistogramSampler:
    histograms: list[np.ndarray]
    schema: object
    rng: np.random.Generator

    def sample(self, n: int, labels: np.ndarray | None = None) -> LabelledData:
        draws = [self.rng.choice(len(h), size=n, p=h / h.sum()) for h in self.histograms]
        y = draws[-1] if labels is None else labels
        return LabelledData(np.stack(draws[:-1], 1).astype(np.float32), y, self.schema)


@dataclass(frozen=True)
class LaplaceHistograms:
    """Laplace-noised 1-way histograms; ``breakage`` switches on one deliberate bug."""

    name: str = "test-laplace"
    data_kinds: frozenset = frozenset({DataKind.DISCRETE})
    private: bool = True
    hyperparameters: HyperParameters = field(default_factory=lambda: HyperParameters(NoParameters))
    breakage: str = ""

    def fit(self, train: LabelledData, context) -> HistogramSampler:
        sizes = [len(c.categories) for c in train.schema.columns] + [train.schema.n_classes]
        columns = [*train.x.T.astype(int), train.y]
        counts = [np.bincount(c, minlength=k).astype(float) for c, k in zip(columns, sizes)]
        epsilon = context.budget.epsilon / len(counts) * (3 if self.breakage == "overspend" else 1)
        rng = np.random.default_rng(context.seed)
        noisy = context.ledger.laplace_each(counts, l1_sensitivity=COUNT_L1_SENSITIVITY, epsilon=epsilon,
                                            what="1-way histograms", rng=rng)
        if self.breakage == "own-noise":  # records the release, then adds noise the ledger never drew
            noisy = [c + rng.laplace(0, COUNT_L1_SENSITIVITY / epsilon, c.shape) for c in counts]
        if self.breakage == "ignores-release":
            noisy = [np.ones_like(c) for c in counts]
        sampling = np.random.default_rng() if self.breakage == "unseeded" else np.random.default_rng(context.seed + 1)
        return HistogramSampler([np.clip(h, 0, None) + 1e-9 for h in noisy], train.schema, sampling)


pytestmark = pytest.mark.skipif(not DATA_DIR, reason="needs DPBENCH_DATA_DIR (adult-discrete)")


def test_a_sound_method_passes():
    report = check_method(LaplaceHistograms(), data_dir=DATA_DIR, datasets=ONLY_DISCRETE)
    assert report.passed == ["adult-discrete"]


@pytest.mark.parametrize(
    "breakage,complaint",
    [
        ("own-noise", "two ledger noise streams gave the same synthetic data"),
        ("ignores-release", "two ledger noise streams gave the same synthetic data"),
        ("unseeded", "the same seed gave different synthetic data"),
        ("overspend", "ε"),
    ],
)
def test_a_broken_method_is_caught(breakage, complaint):
    with pytest.raises(ConformanceError, match=complaint):
        check_method(dataclasses.replace(LaplaceHistograms(), breakage=breakage), data_dir=DATA_DIR, datasets=ONLY_DISCRETE)


def test_a_bad_declaration_is_named():
    with pytest.raises(ConformanceError, match="data_kinds must be a non-empty set"):
        check_method(dataclasses.replace(LaplaceHistograms(), data_kinds=frozenset()))


def test_run_cell_is_the_python_api_of_one_cell(tmp_path):
    import bench

    private = bench.run_cell("independent", "adult-discrete", epsilon=0.5, evaluators=(), data_dir=DATA_DIR, out=tmp_path)
    assert private.ok, private.error
    assert private.metrics["privacy.epsilon_spent"] <= 0.5 * (1 + 1e-9)
    assert private.ledger["releases"] and (tmp_path / "synthetic_sample.csv").exists()
    assert not any(key.startswith("marginals.") for key in private.metrics)  # evaluators=(): none
    evaluated = bench.run_cell("real", "gmm2d", evaluators=("nll",))
    assert evaluated.ok and evaluated.metrics["nll.mean"] > 0
    from bench.core.registry import RegistryError

    with pytest.raises(RegistryError, match="unknown method 'no-such-method'"):
        bench.run_cell("no-such-method", "adult-discrete")
