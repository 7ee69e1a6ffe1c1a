"""The report's tests (issue 59): Holm's correction, the two-sample test against a published
(mean, sd, runs), TOST — each against an independent computation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bench.report.stats import TTest, holm, tost, versus_published


def test_holm_matches_the_textbook_step_down_and_a_brute_force_family_wise_rule():
    ps = [0.01, 0.04, 0.03, 0.005]
    adjusted = [t.adjusted for t in holm([TTest("x", 5, 0.0, 0.0, p) for p in ps])]
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])  # R: p.adjust(c(.01,.04,.03,.005), "holm")
    rng = np.random.default_rng(0)
    for _ in range(200):  # Holm rejects H(i) iff every H(j) with p(j) <= p(i) passes its step threshold
        ps = list(rng.uniform(0, 0.1, size=rng.integers(1, 8)))
        adjusted = [t.adjusted for t in holm([TTest("x", 5, 0.0, 0.0, p) for p in ps])]
        order = np.argsort(ps)
        rejected = set()
        for rank, i in enumerate(order):
            if ps[i] * (len(ps) - rank) >= 0.05:
                break
            rejected.add(i)
        assert {i for i, a in enumerate(adjusted) if a < 0.05} == rejected


def test_the_test_against_a_published_spread_is_welch_from_the_summary_and_a_point_value_is_not_tested():
    ours = pd.Series([0.81, 0.80, 0.83, 0.79, 0.82])
    theirs = [0.86, 0.85, 0.87]  # a paper's 3 runs: mean 0.86, sd 0.01
    test = versus_published(ours, (0.86, float(np.std(theirs, ddof=1)), 3), 3)
    expected = stats.ttest_ind(ours, theirs, equal_var=False)
    assert test.p == pytest.approx(expected.pvalue) and test.statistic == pytest.approx(expected.statistic)
    assert versus_published(ours, 0.86, 3) is None  # a point value: no test
    assert versus_published(ours[:2], (0.86, 0.01, 3), 3) is None  # too few seeds


def test_tost_is_the_larger_of_two_one_sided_welch_tests():
    ours = pd.Series([0.601, 0.612, 0.595, 0.608, 0.603])
    theirs = [0.606, 0.611, 0.598, 0.604, 0.609, 0.600]
    margin = 0.02
    result = tost(ours, theirs, "authors' code", margin, 3)
    above = stats.ttest_ind(ours + margin, theirs, equal_var=False, alternative="greater").pvalue
    below = stats.ttest_ind(ours - margin, theirs, equal_var=False, alternative="less").pvalue
    assert result.p == pytest.approx(max(above, below)) and result.significant
    far = tost(ours + 0.05, theirs, "authors' code", margin, 3)
    assert not far.significant and far.low > margin  # 0.05 apart: not equivalent, and shown beyond it
    point = tost(ours, 0.60, "paper", margin, 3)  # against a constant: one-sample one-sided tests
    one = max(
        stats.ttest_1samp(ours, 0.60 - margin, alternative="greater").pvalue,
        stats.ttest_1samp(ours, 0.60 + margin, alternative="less").pvalue,
    )
    assert point.p == pytest.approx(one)


def test_the_spread_test_is_brown_forsythe_an_anova_of_distances_from_each_group_s_median():
    from bench.report.stats import spread

    rng = np.random.default_rng(1)
    ours, theirs = pd.Series(rng.normal(0.6, 0.06, 15)), list(rng.normal(0.62, 0.01, 15))
    result = spread(ours, theirs, "authors' code", 3)
    deviations = [np.abs(ours - ours.median()), np.abs(np.array(theirs) - np.median(theirs))]
    assert result.p == pytest.approx(stats.f_oneway(*deviations).pvalue)
    assert result.significant and "the spreads differ" in result.text()  # sd ×6: told apart at 15 seeds
    alike = spread(pd.Series(rng.normal(0.6, 0.03, 15)), list(rng.normal(0.6, 0.03, 15)), "x", 3)
    assert not alike.significant and "not shown to differ" in alike.text()
    assert spread(ours[:2], theirs, "x", 3) is None  # too few seeds: no test
