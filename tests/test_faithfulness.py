"""Issue 28's closed gaps, each as a check that fails if it reopens.

The cheap checks run in the default suite: the authors' input files are pinned by their row and
class counts (tests/test_tabular_datasets.py), and the private length scale that moves DP-MERF's
adult result is checked here against the authors' own (non-private) heuristic on the same rows.
The paper-scale checks fit the real generators and classifiers on one seed (about 1–2 minutes
each on 2 cores) and are marked slow (`tox -e slow`); their thresholds sit between the value the
fixed pipeline gave (committed in experiment `faithfulness`, results/REPORT.md) and the value
the pipeline gave before the fix.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from bench import run_cell
from bench.core.data import Column, ColumnKind, LabelledData, Schema
from bench.privacy.private_data import PrivateData
from bench.privacy.budget import PrivacyBudget
from bench.privacy.ledger import BudgetShare, PrivacyLedger
from methods.dp_merf import DP_MEDIAN_SHARE, dp_median_distance, median_distance
from methods.space import ModelSpace


def _paper_rows(data_dir, dataset: str, seed: int = 0):
    from bench.core.data import DataKind
    from bench.api.registry import DATASETS

    split = DATASETS.get(dataset).load(data_dir, seed, "paper")
    space = ModelSpace.for_data(DataKind.TABULAR, split.train.schema, "paper")
    return space, space.encode(split.train.x)[:, space.numerical]


def test_the_private_length_scale_lands_where_the_authors_heuristic_does_on_adult(data_dir):
    """DP-MERF's adult gap is partly its length scale: the authors take the median distance of 10
    private rows (≈ 10⁵, set by fnlwgt), ours came from the public ranges (1.6·10⁶ for fnlwgt, so
    the kernel barely saw it). The private estimate at ε = 1 must land within 1.5× of the median
    over all the pairs, far from the public-range value, and spend only its share."""
    space, rows = _paper_rows(data_dir, "adult-sdgym")
    ledger = PrivacyLedger(PrivacyBudget(1.0, 1e-5))
    sigma, _ = ledger.calibrate_shares([BudgetShare(DP_MEDIAN_SHARE, 1), BudgetShare(1 - DP_MEDIAN_SHARE, 2)])
    diameter = float(np.linalg.norm(space.coordinate_ranges()))
    schema = Schema(
        columns=tuple(Column(f"c{i}", ColumnKind.NUMERICAL, bounds=(-1e9, 1e9)) for i in range(rows.shape[1])),
        label="label",
        classes=("no", "yes"),
    )

    def handle():
        return PrivateData(
            LabelledData(rows, np.zeros(len(rows), dtype=np.int64), schema), PrivacyLedger(PrivacyBudget(1.0, 1e-5))
        )

    estimates = [
        dp_median_distance(handle(), lambda r: r.x, diameter, sigma, np.random.default_rng(s)) for s in range(5)
    ]
    exact = median_distance(rows, np.random.default_rng(0), rows=2000)
    assert all(exact / 1.5 < e < exact * 1.5 for e in estimates), (exact, estimates)
    fnlwgt_public = space.coordinate_ranges()[1] * math.sqrt(len(space.numerical) / 6)
    assert max(estimates) < fnlwgt_public / 5


def _cell(data_dir, method: str, dataset: str, epsilon: float, overrides=None, eval_settings=None) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_cell(
            method,
            dataset,
            epsilon=epsilon,
            seed=0,
            protocol="paper",
            evaluators=["downstream"],
            overrides=overrides,
            data_dir=data_dir,
            eval_settings=eval_settings,
        )
    assert result.status == "FINISHED", result.error
    return result.metrics


@pytest.mark.slow
def test_dpmerf_adult_seed_0_at_the_authors_noise_is_well_above_chance(data_dir):
    """At the noise the authors' code adds at its claimed ε = 1 (our 13.8 with dp-median), ours
    matches their code over 15 seeds (0.606 vs 0.616, Welch p = 0.48); seed 0 scores 0.593
    hard-label ROC. The issue's complaint was a seed below chance (0.479). At a true ε = 1 a single
    seed is chaotic (round-off moved seed 0 from 0.570 to 0.524), so the guard sits at the authors'
    noise level."""
    metrics = _cell(data_dir, "dp-merf", "adult-sdgym", 13.8, {"length_scale_rule": "dp-median"})
    assert metrics["downstream.paper.roc_auc"] > 0.55


@pytest.mark.slow
def test_dphp_on_the_authors_z_scored_adult_p_reaches_table_2(data_dir):
    """On adult.p as the authors preprocessed it (adult-dphp-zscored) DP-HP at ε = 1 scores 0.683 ±
    0.025 over 5 seeds (paper 0.688; the authors' code here 0.638), seed 0 0.664; on the raw-unit
    file the same cell gave 0.55."""
    metrics = _cell(data_dir, "dp-hp", "adult-dphp-zscored", 1.0)
    assert metrics["downstream.test_selected_best.roc_auc"] > 0.62


@pytest.mark.slow
def test_real_adult_p_with_z_scoring_classifiers_meets_dphp_table_2s_real_row(data_dir):
    """DP-HP Table 2's real adult row, 0.786, is met on adult.p's rows (adult-dphp-logs) only when
    the classifiers z-score their inputs as the authors' file was (seed 0: 0.794; unscaled 0.753)."""
    metrics = _cell(
        data_dir, "real", "adult-dphp-logs", math.inf, eval_settings={"downstream": {"scaling": "standard"}}
    )
    assert abs(metrics["downstream.test_selected_best.roc_auc"] - 0.786) < 0.02


@pytest.mark.slow
def test_dphp_cervical_without_noise_reaches_dpmerf_with_the_authors_length_scales(data_dir):
    """DP-HP cervical at ε = ∞ scored 0.627 (5 seeds) with public-range length scales against
    DP-MERF's 0.815; with the authors' median heuristic seed 0 scores 0.785."""
    metrics = _cell(data_dir, "dp-hp", "cervical", math.inf, {"length_scale_rule": "median-heuristic"})
    assert metrics["downstream.test_selected_best.roc_auc"] > 0.72
