"""The trivial baselines `uniform` and `independent`, and the ledger's `gaussian` release door."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from bench.privacy.private_data import PrivateData
from bench.core.data import ColumnKind
from bench.api.contracts import EvalContext, FitContext
from bench.api.registry import DATASETS, METHODS
from bench.harness.grid import GridSpec, expand
from bench.harness.worker import execute
from bench.privacy.budget import PrivacyBudget
from bench.privacy.ledger import PrivacyLedger
from bench.privacy.subsampled import PrivacyBudgetExceeded

SMALL_DISCRETE = "adult-discrete-2k-baselines"


@pytest.fixture(scope="module")
def small_discrete(data_dir):
    """adult-discrete's first 2,000 training and 500 test rows (same schema and code paths)."""
    full = DATASETS.get("adult-discrete")

    def read(folder):
        train, test = full.read(folder)
        return train[:2000], test[:500]

    DATASETS.register(dataclasses.replace(full, name=SMALL_DISCRETE, read=read))
    yield SMALL_DISCRETE
    DATASETS.unregister(SMALL_DISCRETE)


def run_cell(tmp_path, method, dataset, data_dir, epsilon=1.0, seed=0):
    spec = GridSpec(methods=[method], datasets=[dataset], epsilons=[epsilon], seeds=[seed], data_dir=str(data_dir))
    (cell,), _ = expand(spec)
    folder = tmp_path / f"{method}-{dataset}-{epsilon}-{seed}"
    folder.mkdir()
    outcome = execute(cell.to_json(), str(folder), lambda fraction: None)
    assert outcome.status == "FINISHED", outcome.error
    return outcome, json.loads((folder / "ledger.json").read_text())


def fit(method, dataset, data_dir, epsilon=1.0, seed=0, protocol="sound", rows=None):
    import torch

    split = DATASETS.get(dataset).load(data_dir, seed, protocol)
    train = split.train if rows is None else rows
    budget = PrivacyBudget(epsilon, 1e-5) if math.isfinite(epsilon) else PrivacyBudget.non_private()
    ledger = PrivacyLedger(budget)
    adapter = METHODS.get(method)
    params = adapter.hyperparameters.resolve(dataset, private=math.isfinite(epsilon)).params
    context = FitContext(budget=budget, ledger=ledger, params=params, seed=seed, device=torch.device("cpu"))
    return adapter.fit(PrivateData(train, context.ledger), context), ledger, split


def test_uniform_through_the_harness_spends_nothing_and_says_so(tmp_path, data_dir, small_discrete):
    for dataset in ("cervical", small_discrete):
        outcome, ledger = run_cell(tmp_path, "uniform", dataset, data_dir, epsilon=0.3)
        assert outcome.metrics["privacy.epsilon_spent"] == 0.0  # logged, not left out
        assert ledger["releases"] == [] and ledger["spent"] == {"epsilon": 0.0, "delta": 0.0}
        assert ledger["target"]["epsilon"] == 0.3
        assert any(f["name"] == "column domains" for f in ledger["public_facts"])
        assert any(k.startswith(("downstream.", "marginals.")) for k in outcome.metrics)


def test_uniform_never_reads_a_row_and_covers_the_public_domain(data_dir):
    model, _, split = fit("uniform", "cervical", data_dir)
    train = split.train
    scrambled = dataclasses.replace(train, x=np.zeros_like(train.x), y=np.zeros_like(train.y))
    other, _, _ = fit("uniform", "cervical", data_dir, rows=scrambled)
    a, b = model.sample(5000), other.sample(5000)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)  # the rows made no difference
    for j, column in enumerate(train.schema.columns):
        values = a.x[:, j]
        if column.kind == ColumnKind.NUMERICAL:
            low, high = column.bounds
            assert low <= values.min() and values.max() <= high
            assert abs(values.mean() - (low + high) / 2) < 0.05 * (high - low)  # uniform, not the data's mean
        else:  # every code of the public domain, equally often
            size = 2 if column.kind == ColumnKind.BINARY else len(column.categories)
            shares = np.bincount(values.astype(int), minlength=size) / len(values)
            assert len(shares) == size and np.abs(shares - 1 / size).max() < 0.03, column.name
    assert abs(a.y.mean() - 0.5) < 0.03  # binary label, uniform


def test_independent_through_the_harness_records_one_release_per_marginal(tmp_path, data_dir, small_discrete):
    outcome, ledger = run_cell(tmp_path, "independent", "cervical", data_dir, epsilon=1.0)
    schema = DATASETS.get("cervical").schema
    releases = ledger["releases"]
    assert len(releases) == schema.n_features + 1  # every column and the label
    assert releases[-1]["what"].startswith("1-way marginal of the label")
    assert all(r["sensitivity"] == pytest.approx(math.sqrt(2)) for r in releases)
    assert ledger["spent"]["epsilon"] == pytest.approx(1.0, rel=1e-5)
    assert outcome.metrics["privacy.epsilon_spent"] == pytest.approx(1.0, rel=1e-5)

    _, discrete = run_cell(tmp_path, "independent", small_discrete, data_dir, epsilon=1.0)
    n_columns = DATASETS.get(small_discrete).schema.n_features
    assert len(discrete["releases"]) == n_columns  # the single class is public, not released
    assert any(f["name"] == "class_proportions" for f in discrete["public_facts"])


def test_independent_learns_the_marginals_and_beats_uniform_on_them(data_dir, small_discrete):
    from bench.api.registry import EVALUATORS

    marginals = EVALUATORS.get("marginals")
    model, ledger, split = fit("independent", small_discrete, data_dir, epsilon=math.inf)
    assert all(r["noise_multiplier"] == 0 for r in json.loads(ledger.to_json())["releases"])
    synthetic = model.sample(len(split.train))
    for j in range(split.train.x.shape[1]):  # without noise the 1-way marginals are the data's
        size = len(split.train.schema.columns[j].categories)
        real = np.bincount(split.train.x[:, j].astype(int), minlength=size) / len(split.train)
        ours = np.bincount(synthetic.x[:, j].astype(int), minlength=size) / len(synthetic)
        assert np.abs(real - ours).sum() / 2 < 0.05
    private, _, _ = fit("independent", small_discrete, data_dir, epsilon=1.0)
    uniform, _, _ = fit("uniform", small_discrete, data_dir)
    scores = {
        name: marginals.evaluate(m.sample(len(split.train)), split.train, split.test, EvalContext()).metrics["tv_2"]
        for name, m in (("independent", private), ("uniform", uniform))
    }
    assert scores["independent"] < scores["uniform"] - 0.1, scores


def test_independent_bins_numerical_columns_on_public_bounds(data_dir):
    model, _, split = fit("independent", "cervical", data_dir, epsilon=math.inf)
    sample = model.sample(20_000)
    for j, column in enumerate(split.train.schema.columns):
        if column.kind != ColumnKind.NUMERICAL:
            continue
        low, high = column.bounds
        width = (high - low) / 20
        real = np.clip(split.train.x[:, j], low, high)
        # without noise, the share of synthetic values in each bin is the share of real ones
        real_bins = np.bincount(np.minimum(((real - low) // width).astype(int), 19), minlength=20) / len(real)
        ours_bins = np.bincount(np.minimum(((sample.x[:, j] - low) // width).astype(int), 19), minlength=20) / len(
            sample
        )
        assert np.abs(real_bins - ours_bins).max() < 0.02, column.name
        assert low <= sample.x[:, j].min() and sample.x[:, j].max() <= high


def test_ledger_gaussian_records_then_adds_noise_of_the_stated_scale():
    import torch

    ledger = PrivacyLedger(PrivacyBudget(1.0, 1e-5))
    sigma = ledger.calibrate_gaussian(compositions=2)
    noisy = ledger.gaussian(
        np.zeros(200_000), sensitivity=2.0, noise_multiplier=sigma, what="a", rng=np.random.default_rng(0)
    )
    assert noisy.std() == pytest.approx(2.0 * sigma, rel=0.01)
    noisy_t = ledger.gaussian(
        torch.zeros(200_000, dtype=torch.float64),
        sensitivity=1.0,
        noise_multiplier=sigma,
        what="b",
        rng=torch.Generator().manual_seed(0),
    )
    assert float(noisy_t.std()) == pytest.approx(sigma, rel=0.01)
    assert [r.what for r in ledger.releases] == ["a", "b"]
    assert ledger.epsilon_spent == pytest.approx(1.0, rel=1e-5)
    with pytest.raises(PrivacyBudgetExceeded):
        ledger.gaussian(np.zeros(3), sensitivity=1.0, noise_multiplier=sigma, what="c", rng=np.random.default_rng(0))
    assert len(ledger.releases) == 2  # refused before it was recorded


def test_a_2d_runs_samples_png_draws_the_real_test_split_never_a_training_row(tmp_path, data_dir, monkeypatch):
    """``samples.png`` is left beside the run (and copied into results/report_files): its real
    points must be ones the evaluators read anyway, the test split's, not the private training rows."""
    from bench.harness import artifacts

    drawn = {}
    monkeypatch.setattr(artifacts, "save_scatter", lambda synthetic, real, path, title: drawn.update(real=real))
    run_cell(tmp_path, "real", "gmm2d", data_dir, epsilon=math.inf)
    split = DATASETS.get("gmm2d").load(data_dir, 0)
    np.testing.assert_array_equal(drawn["real"].x, split.test.x)
    assert not np.isin(drawn["real"].x[:, 0], split.train.x[:, 0]).all()
