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


def test_equal_seeds_are_one_draw_whose_tests_keep_their_level_where_a_zero_sd_would_not():
    """Real data on a fixed split, scored by classifiers of fixed seeds, gives every seed the same
    number (DP-HP Fig. 3's real rows: "0.875 ± 0 (3)", TOST p = 0). Simulated under the null —
    our one draw and the paper's 5 runs from one normal — the test against the published (mean, sd,
    runs) rejects at its 5% level; the same draw repeated three times and taken as three seeds (the
    zero-sd Welch t this replaced) rejects far more often."""
    rng = np.random.default_rng(1)
    trials, rejected, rejected_as_seeds = 4000, 0, 0
    for _ in range(trials):
        draw, runs = rng.normal(0.8, 0.01), rng.normal(0.8, 0.01, size=5)
        published = (float(runs.mean()), float(runs.std(ddof=1)), 5)
        rejected += versus_published(pd.Series([draw] * 3), published, 3).p < 0.05
        a, b = 0.0, runs.var(ddof=1) / 5  # the replaced test: our variance 0, n = 3
        t = (draw - runs.mean()) / np.sqrt(a + b)
        rejected_as_seeds += 2 * stats.t.sf(abs(t), 4) < 0.05
    assert 0.035 < rejected / trials < 0.065 and rejected_as_seeds / trials > 0.2

    from bench.report.stats import equal_seeds

    assert equal_seeds(pd.Series([0.79, 0.79 + 1e-16, 0.79])) and not equal_seeds(pd.Series([0.79, 0.7901, 0.79]))
    assert not equal_seeds(pd.Series([0.79, float("nan")]))  # one seed is no repetition

    # the prediction error: sd·√(1 + 1/runs), runs − 1 degrees of freedom (MNIST n = 12,000 of Fig. 3)
    test = versus_published(pd.Series([0.859] * 3), (0.8379, 0.0034, 5), 3)
    t = (0.859 - 0.8379) / (0.0034 * np.sqrt(1.2))
    assert test.statistic == pytest.approx(t) and test.p == pytest.approx(2 * stats.t.sf(t, 4)) and test.n == 5


def test_tost_of_equal_seeds_needs_the_other_side_s_spread_and_keeps_its_level_at_the_margin():
    margin = 0.02
    assert tost(pd.Series([0.783] * 3), 0.7744, "paper", margin, 3) is None  # one draw against a point value
    rng = np.random.default_rng(2)
    trials, claimed = 3000, 0
    for _ in range(trials):  # the true difference sits on the margin: "equivalent" at most 5% of the time
        draw, runs = rng.normal(0.8 + margin, 0.01), rng.normal(0.8, 0.01, size=5)
        claimed += tost(pd.Series([draw] * 3), list(runs), "paper", margin, 3).significant
    assert claimed / trials < 0.06


def test_a_calibration_row_of_equal_seeds_against_a_point_value_is_compared_plainly_not_tested():
    from bench.report.calibration import Calibration

    row = Calibration("fashion-mnist", "n=120", pd.Series([0.601] * 3), 0.5910, True)
    assert not row.miss
    assert row.verdict() == (
        "one measurement: its 3 seeds are equal, nothing in it depends on the seed; against a point value: "
        "Δ +0.010 within ±0.02, not tested"
    )
    beyond = Calibration("mnist", "Ada", pd.Series([0.799] * 3), 0.7097, True)  # flagged, and so explained
    assert beyond.miss and beyond.verdict().startswith("**MISS** by a plain comparison, not a test: Δ +0.089")
    tested = Calibration("mnist", "n=12000", pd.Series([0.859] * 3), (0.8379, 0.0034, 5), True)
    assert tested.miss and "tested as one draw against the paper's runs" in tested.verdict()
