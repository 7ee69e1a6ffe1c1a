"""The α-way marginal evaluator and the discretized datasets (DP-HP (arXiv:2106.05042) Sec. 5.2 and App. G.1)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from bench.core.data import LabelledData
from bench.api.contracts import EvalContext
from datasets.adult_discrete import ADULT_DISCRETE
from datasets.census_discrete import CENSUS_DISCRETE
from datasets.discrete import domain_sizes
from evaluators.marginals import (
    MarginalErrors,
    column_subsets,
    counted_l1_distance,
    gram_l1_distance,
    mean_tv_distance,
    paper_codes,
)


def reference_mean_tv(real, synthetic, sizes, alpha):
    """One np.histogramdd per subset over the full domain: slow, obviously right."""
    total = 0.0
    subsets = list(itertools.combinations(range(len(sizes)), alpha))
    for subset in subsets:
        edges = [np.arange(sizes[j] + 1) - 0.5 for j in subset]
        p = np.histogramdd(real[:, subset], bins=edges)[0] / len(real)
        q = np.histogramdd(synthetic[:, subset], bins=edges)[0] / len(synthetic)
        total += 0.5 * np.abs(p - q).sum()
    return total / len(subsets)


def test_hand_computed_tables():
    real = np.array([[0, 0], [0, 1], [1, 2], [1, 2]])
    synthetic = np.array([[0, 0], [0, 0], [1, 1], [1, 2]])
    # 2-way: real (0,0) .25 (0,1) .25 (1,2) .5; synthetic (0,0) .5 (1,1) .25 (1,2) .25 → ½·1.0
    assert mean_tv_distance(real, synthetic, [2, 3], 2) == pytest.approx(0.5)
    # 1-way: column 0 agrees; column 1 real (.25,.25,.5) vs (.5,.25,.25) → ½·0.5; mean of two
    assert mean_tv_distance(real, synthetic, [2, 3], 1) == pytest.approx(0.125)


@pytest.mark.parametrize("alpha", [2, 3, 4])
def test_both_exact_paths_match_histogramdd(alpha):
    rng = np.random.default_rng(alpha)
    sizes = np.array([2, 5, 3, 4, 6, 2])  # a code of every column left unused: empty bins count
    real = np.stack([rng.integers(0, max(s - 1, 1), 300) for s in sizes], axis=1)
    synthetic = np.stack([rng.integers(0, s, 200) for s in sizes], axis=1)
    expected = reference_mean_tv(real, synthetic, sizes, alpha)
    count = math.comb(len(sizes), alpha)
    assert 0.5 * counted_l1_distance(real, synthetic, sizes, alpha) / count == pytest.approx(expected, rel=1e-9)
    assert 0.5 * gram_l1_distance(real, synthetic, sizes, alpha) / count == pytest.approx(expected, rel=1e-6)
    assert mean_tv_distance(real, synthetic, sizes, alpha) == pytest.approx(expected, rel=1e-6)


def test_subset_counts():
    assert len(column_subsets(15, 3)) == math.comb(15, 3) == 455
    assert len(column_subsets(41, 3)) == 10_660
    assert len({tuple(s) for s in column_subsets(7, 4)}) == math.comb(7, 4)
    with pytest.raises(ValueError, match="α"):
        column_subsets(3, 4)


def test_paper_convention_is_the_seeds_histogramdd_of_alpha_plus_one():
    rng = np.random.default_rng(0)
    real = np.stack([rng.integers(0, k, 400) for k in (2, 5, 4, 7)], axis=1).astype(float)
    synthetic = np.stack([rng.integers(0, k, 300) for k in (2, 5, 4, 7)], axis=1).astype(float)
    synthetic[:, 1] = np.minimum(synthetic[:, 1], 2)  # a narrower own range: shifted bin edges
    low, high = real.min(0), real.max(0)
    clipped = np.clip(np.rint(synthetic), low, high)
    bins = (high - low).astype(int)
    expected = []
    for subset in itertools.combinations(range(4), 3):  # the seeds' "α = 2" is 3-way
        b = [bins[j] for j in subset]
        p = np.histogramdd(real[:, subset], bins=b)[0] / len(real)
        q = np.histogramdd(clipped[:, subset], bins=b)[0] / len(clipped)
        expected.append(0.5 * np.abs(p - q).sum())
    real_bins, synthetic_bins, sizes = paper_codes(real, synthetic)
    assert mean_tv_distance(real_bins, synthetic_bins, sizes, 3) == pytest.approx(np.mean(expected))


@pytest.fixture(scope="module")
def adult_discrete(data_dir):
    return ADULT_DISCRETE.load(data_dir, seed=0)


def test_adult_discrete_rows_and_domains(adult_discrete):
    assert adult_discrete.train.x.shape == (
        22_561,
        15,
    )  # SDGym adult train (github.com/ParkLabML/DP-HP data/real/sdgym_simple_adult.npy)
    assert adult_discrete.test.x.shape == (10_000, 15)
    assert list(domain_sizes(ADULT_DISCRETE.schema)) == [7, 9, 11, 16, 16, 7, 15, 6, 2, 2, 2, 2, 4, 2, 2]
    assert adult_discrete.train.x[:, -1].sum() == 5_473  # SDGym train's positives (sdgym 0.1.0 adult)


def test_census_discrete_rows_and_domains(data_dir):
    split = CENSUS_DISCRETE.load(data_dir, seed=0)
    assert split.train.x.shape == (199_523, 41)
    assert split.test.x.shape == (99_762, 41)
    assert (split.train.x.max(axis=0) < domain_sizes(CENSUS_DISCRETE.schema)).all()


def test_copy_scores_zero_and_random_table_scores_high(adult_discrete):
    evaluator = MarginalErrors()
    train = adult_discrete.train
    rng = np.random.default_rng(0)
    copy = LabelledData(train.x[rng.permutation(len(train))], train.y, train.schema)
    values = evaluator.evaluate(copy, train, adult_discrete.test, EvalContext()).metrics
    assert set(values) == {"tv_2", "tv_3", "tv_4", "paper.tv_2", "paper.tv_3", "paper.tv_4"}
    assert all(v == pytest.approx(0, abs=1e-12) for v in values.values())
    sizes = domain_sizes(train.schema)
    uniform = np.stack([rng.integers(0, k, len(train)) for k in sizes], axis=1).astype(np.float32)
    values = evaluator.evaluate(
        LabelledData(uniform, train.y, train.schema), train, adult_discrete.test, EvalContext()
    ).metrics
    assert values["tv_2"] > 0.4 and values["tv_3"] > values["tv_2"]
