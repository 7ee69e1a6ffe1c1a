"""The 2-D mixture dataset and the NLL evaluator."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from bench.api.contracts import EvalContext
from datasets.gmm2d import SCHEMA, STD, draw_split, mixture_centres
from evaluators.nll import NegativeLogLikelihood


def test_split_sizes_balance_and_determinism():
    split = draw_split(seed=0)
    assert (len(split.train), len(split.test)) == (90_000, 10_000)
    assert split.train.class_counts().tolist() == [18_000] * 5
    assert np.array_equal(draw_split(seed=0).train.x, split.train.x)
    assert not np.array_equal(draw_split(seed=1).train.x, split.train.x)


def test_class_layout_follows_the_authors_row_starts():
    centres, classes = mixture_centres()
    grid = dict(zip(map(tuple, centres.astype(int)), classes))
    assert [grid[(r, 0)] for r in range(5)] == [0, 2, 4, 1, 3]
    assert np.bincount(classes).tolist() == [5] * 5


def test_density_matches_scipy_mixture():
    centres, classes = mixture_centres()
    x = np.array([[0.1, 0.2], [3.3, 1.9], [10.0, -3.0]])
    y = np.array([0, 3, 1])
    expected = [
        np.log(sum(multivariate_normal(c, STD**2 * np.eye(2)).pdf(point) / 25 for c in centres[classes == label]))
        for point, label in zip(x, y)
    ]
    assert SCHEMA.true_density.log_prob(x, y) == pytest.approx(expected, rel=1e-9)


def test_nll_of_real_data_matches_fig2_and_the_correct_density():
    split = draw_split(seed=0)
    scores = NegativeLogLikelihood().evaluate(split.train, split.train, split.test, EvalContext()).metrics
    assert scores["paper_sum"] == pytest.approx(3.17e5, rel=0.02)  # Fig. 2: ≈ 3.1×10⁵ (1-D normaliser)
    assert scores["mean"] * 90_000 == pytest.approx(
        2.55e5, rel=0.02
    )  # 2-D normaliser (DP-HP (arXiv:2106.05042) Sec. 5.1)


def test_nll_is_worse_for_wrong_labels_and_off_grid_samples():
    split = draw_split(seed=0)
    evaluator = NegativeLogLikelihood()
    good = evaluator.evaluate(split.test, split.train, split.test, EvalContext()).metrics["mean"]
    shuffled = split.test.__class__(split.test.x, (split.test.y + 1) % 5, SCHEMA)
    shifted = split.test.__class__(split.test.x + 0.5, split.test.y, SCHEMA)
    assert evaluator.evaluate(shuffled, split.train, split.test, EvalContext()).metrics["mean"] > good + 5
    assert evaluator.evaluate(shifted, split.train, split.test, EvalContext()).metrics["mean"] > good + 2
